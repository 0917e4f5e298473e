/* vec.h — growing a malloc'd array by doubling, the one helper every layer
 * uses for its vectors (profile, symbolize, store, server); and zeroed
 * tables that hashing reads before it writes (hs_table_calloc). */
#ifndef HS_BASE_VEC_H
#define HS_BASE_VEC_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

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
