/* vec.h — growing a malloc'd array by doubling, the one helper every layer
 * uses for its vectors (profile, symbolize, store, server); and zeroed
 * tables that hashing reads before it writes (hs_table_calloc). */
#ifndef HS_BASE_VEC_H
#define HS_BASE_VEC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The capacity hs_vec_reserve gives cap for need: for arrays side by
 * side that share one capacity (each then resized with HS_VEC_RESIZE). 0 on
 * overflow. */
static inline size_t hs_vec_grown(size_t cap, size_t need, size_t elem)
{
    size_t ncap = cap ? cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return 0;
        ncap *= 2;
    }
    return ncap;
}

/* *arr resized to n items of elem bytes: 0, or -1 (*arr unchanged). */
static inline int hs_vec_resize(void **arr, size_t n, size_t elem)
{
    if (n > SIZE_MAX / elem)
        return -1;
    void *p = realloc(*arr, n * elem);
    if (!p)
        return -1;
    *arr = p;
    return 0;
}

#define HS_VEC_RESIZE(arr, n) hs_vec_resize((void **)&(arr), (n), sizeof *(arr))

/* Grow *arr (of elem-sized items, *cap of them) to hold at least need.
 * 0, or -1 on overflow or out of memory (*arr and *cap unchanged). */
static inline int hs_vec_reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t ncap = hs_vec_grown(*cap, need, elem);
    if (!ncap || hs_vec_resize(arr, ncap, elem))
        return -1;
    *cap = ncap;
    return 0;
}

/* hs_vec_reserve for an array variable and its capacity variable. */
#define HS_VEC_RESERVE(arr, cap, need) hs_vec_reserve((void **)&(arr), &(cap), (need), sizeof *(arr))

/* hs_vec_reserve, and the items the growth adds (from the old *cap to the
 * new) zeroed: for arrays indexed by an id, read before they are written. */
static inline int hs_vec_reserve_zeroed(void **arr, size_t *cap, size_t need, size_t elem)
{
    size_t old = *cap;
    if (hs_vec_reserve(arr, cap, need, elem))
        return -1;
    if (*cap > old)
        memset((char *)*arr + old * elem, 0, (*cap - old) * elem);
    return 0;
}

#define HS_VEC_RESERVE_ZEROED(arr, cap, need) \
    hs_vec_reserve_zeroed((void **)&(arr), &(cap), (need), sizeof *(arr))

/* calloc(n, elem) for a table that lookups read before insertions write
 * (hash slots): a large one's pages are faulted in writable at once
 * (MADV_POPULATE_WRITE, Linux >= 5.14; without it, as calloc). Fresh
 * pages map the shared zero page when first read, and the first write then
 * replaces it: a second fault, and a TLB flush on every other CPU running
 * one of the process's threads (an interrupt each, on a VM an exit). */
static inline void *hs_table_calloc(size_t n, size_t elem)
{
    void *p = calloc(n, elem);
#ifdef MADV_POPULATE_WRITE
    long page = sysconf(_SC_PAGESIZE);
    size_t len = n * elem; /* (calloc checked the product) */
    if (p && page > 0 && len >= ((size_t)1 << 20)) {
        uintptr_t a = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
        uintptr_t e = ((uintptr_t)p + len) & ~((uintptr_t)page - 1);
        if (e > a)
            (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
    }
#endif
    return p;
}

#endif
