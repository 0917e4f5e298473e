/* output.h — turn the agent's tables into symbolized pprof files. */
#ifndef HS_AGENT_OUTPUT_H
#define HS_AGENT_OUTPUT_H

#include <stddef.h>

#include "agent/heap.h"

/* Expand the output template: %p -> pid, %% -> %. 0, or -1 if too long. */
int hs_output_expand(const char *tmpl, char *out, size_t outlen);
/* Write the CPU profile collected so far. 0, or -1 with a message on stderr. */
int hs_output_write_cpu(const char *path);
/* Write a heap profile (all four values, the peak, or the leaks). */
int hs_output_write_heap(const char *path, hs_heap_view view);

#endif
