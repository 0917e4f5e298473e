/* counters.h — hardware counters of the calling thread through
 * perf_event_open(2): instructions, cycles, branch misses, cache misses,
 * user space only, scaled when the kernel multiplexes them. */
#ifndef HS_HARNESS_COUNTERS_H
#define HS_HARNESS_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#define HS_HWC_N 4
extern const char *const hs_hwc_names[HS_HWC_N]; /* "instructions", ... */

typedef struct {
    int fd[HS_HWC_N]; /* -1: that counter is unavailable */
} hs_hwc;

/* Open the counters of the calling thread, disabled. Returns how many
 * opened; with 0, err tells why the first one failed. */
int hs_hwc_open(hs_hwc *h, char *err, size_t errlen);
/* Start counting; reset: from zero (else resume after a disable). */
void hs_hwc_enable(hs_hwc *h, int reset);
void hs_hwc_disable(hs_hwc *h);
/* Counts since the last reset; -1 for an unavailable counter. */
void hs_hwc_read(hs_hwc *h, double out[HS_HWC_N]);
void hs_hwc_close(hs_hwc *h);

#endif
