/* output.h — turn the agent's tables into symbolized pprof files. */
#ifndef HS_AGENT_OUTPUT_H
#define HS_AGENT_OUTPUT_H

#include <stddef.h>

#include "agent/heap.h"

/* Write one profile: the samples since the last dump (everything, if there
 * was none); with `advance` this write becomes the new last dump. Heap
 * in-use figures, the peak and the leaks are states, not deltas. 0, or -1
 * with a message on stderr. */
int hs_output_write_cpu(const char *path, int advance);
int hs_output_write_wall(const char *path, int advance);
int hs_output_write_lock(const char *path, int advance);
int hs_output_write_heap(const char *path, hs_heap_view view, int advance);

#endif
