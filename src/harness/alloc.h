/* alloc.h — exact allocation counts of the measured loop. The harness
 * interposes the malloc family (alloc.c) and counts, per thread, the calls
 * and requested bytes made between hs_alloc_begin() and hs_alloc_end()
 * while not paused; everything else is forwarded untouched. */
#ifndef HS_HARNESS_ALLOC_H
#define HS_HARNESS_ALLOC_H

#include <stdint.h>

/* Zero this thread's counters and start counting. */
void hs_alloc_begin(void);
/* Stop counting; *n allocations of *bytes bytes since hs_alloc_begin(). */
void hs_alloc_end(uint64_t *n, uint64_t *bytes);
void hs_alloc_pause(void);
void hs_alloc_resume(void);
/* 1 if allocations are seen at all (the interposition is in effect). */
int hs_alloc_active(void);

#endif
