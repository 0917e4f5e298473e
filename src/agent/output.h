/* output.h — turn the agent's tables into symbolized pprof files. */
#ifndef HS_AGENT_OUTPUT_H
#define HS_AGENT_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/heap.h"

/* Write one profile: the samples since the last dump (everything, if there
 * was none); with `advance` this write becomes the new last dump. Heap
 * in-use figures, the peak and the leaks are states, not deltas. 0, or -1
 * with a message on stderr. */
int hs_output_write_cpu(const char *path, int advance);
int hs_output_write_wall(const char *path, int advance);
int hs_output_write_lock(const char *path, int advance);
int hs_output_write_heap(const char *path, hs_heap_view view, int advance);

/* Continuous mode: a profile in memory, gzipped pprof (malloc'd). */
typedef struct {
    void *data;
    size_t len;
    int64_t start_ns, duration_ns; /* the window it covers (CLOCK_REALTIME) */
    int64_t end_ns;                /* the window's end as asked for (0: now) */
    size_t n_samples;              /* samples in it (0: nothing happened in the window) */
} hs_encoded;

/* The profile of type ("cpu", "wall", "lock" or "heap": allocations since
 * the last dump and in use now) from the last dump to end_ns (0: now),
 * always symbolized (the calls until hs_output_release share one
 * symbolizer), encoded into *enc; this becomes the last dump. 0, or -1 with
 * a message on stderr. */
int hs_output_encode(const char *type, int64_t end_ns, hs_encoded *enc);
/* A window is encoded: free the shared symbolizer and trim the heap. */
void hs_output_release(void);

#endif
