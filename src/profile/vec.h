/* vec.h — growing a malloc'd array by doubling, the one helper every layer
 * uses for its vectors (profile, symbolize, store, server). */
#ifndef HS_PROFILE_VEC_H
#define HS_PROFILE_VEC_H

#include <stdint.h>
#include <stdlib.h>

/* Grow *arr (of elem-sized items, *cap of them) to hold at least need.
 * 0, or -1 on overflow or out of memory (*arr and *cap unchanged). */
static inline int hs_vec_reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return -1;
        ncap *= 2;
    }
    void *n = realloc(*arr, ncap * elem);
    if (!n)
        return -1;
    *arr = n;
    *cap = ncap;
    return 0;
}

/* hs_vec_reserve for an array variable and its capacity variable. */
#define HS_VEC_RESERVE(arr, cap, need) hs_vec_reserve((void **)&(arr), &(cap), (need), sizeof *(arr))

#endif
