/* counters.c — per-thread hardware counters with perf_event_open(2)
 * (counters.h). Each counter is its own event (not a group) so that one the
 * machine lacks does not take the others with it; reads carry the enabled
 * and running times to scale multiplexed counts. */
#define _GNU_SOURCE
#include "harness/counters.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *const hs_hwc_names[HS_HWC_N] = {"instructions", "cycles", "branch-misses", "cache-misses"};

static const uint64_t configs[HS_HWC_N] = {PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_CPU_CYCLES,
                                           PERF_COUNT_HW_BRANCH_MISSES, PERF_COUNT_HW_CACHE_MISSES};

int hs_hwc_open(hs_hwc *h, char *err, size_t errlen)
{
    int opened = 0;
    if (err && errlen)
        err[0] = '\0';
    for (int i = 0; i < HS_HWC_N; i++) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = PERF_TYPE_HARDWARE;
        a.config = configs[i];
        a.disabled = 1;
        a.exclude_kernel = 1;
        a.exclude_hv = 1;
        a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        h->fd[i] = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (h->fd[i] >= 0)
            opened++;
        else if (err && errlen && !err[0])
            snprintf(err, errlen, "perf_event_open(%s): %s", hs_hwc_names[i], strerror(errno));
    }
    return opened;
}

void hs_hwc_enable(hs_hwc *h, int reset)
{
    for (int i = 0; i < HS_HWC_N; i++)
        if (h->fd[i] >= 0) {
            if (reset)
                (void)ioctl(h->fd[i], PERF_EVENT_IOC_RESET, 0);
            (void)ioctl(h->fd[i], PERF_EVENT_IOC_ENABLE, 0);
        }
}

void hs_hwc_disable(hs_hwc *h)
{
    for (int i = 0; i < HS_HWC_N; i++)
        if (h->fd[i] >= 0)
            (void)ioctl(h->fd[i], PERF_EVENT_IOC_DISABLE, 0);
}

void hs_hwc_read(hs_hwc *h, double out[HS_HWC_N])
{
    for (int i = 0; i < HS_HWC_N; i++) {
        out[i] = -1;
        uint64_t v[3];
        if (h->fd[i] < 0 || read(h->fd[i], v, sizeof v) != (ssize_t)sizeof v || v[2] == 0)
            continue;
        out[i] = (double)v[0] * ((double)v[1] / (double)v[2]);
    }
}

void hs_hwc_close(hs_hwc *h)
{
    for (int i = 0; i < HS_HWC_N; i++)
        if (h->fd[i] >= 0) {
            close(h->fd[i]);
            h->fd[i] = -1;
        }
}
