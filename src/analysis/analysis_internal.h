/* analysis_internal.h — what is private to src/analysis: the view's
 * internals shared by its files, pprof's naming helpers. (The compiled
 * filters and the rules on them are filters.h's, for every stack source;
 * the map, string table and error helper are src/base's.) */
#ifndef HS_ANALYSIS_INTERNAL_H
#define HS_ANALYSIS_INTERNAL_H

#include "analysis/regex.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "analysis/filters.h"
#include "base/err.h"
#include "base/hashmap.h"
#include "base/strtab.h"

/* ---- the view build ---- */
/* Profiles of at least this many samples (default 4096) have their
 * locations worked out on a second thread while their samples are merged,
 * and their stacks' nodes filled on two threads from 16 times as many
 * frames (view.c); tests set it to 0 or SIZE_MAX to take either path. */
extern size_t hs_an_view_apart_min;

/* The view's stacks with identical node sequences (and inline flags)
 * summed; stacks of value 0 and base 0 left out. Computed once, owned by the
 * view. 0, or -1 on out of memory. */
int hs_an_view_unique(const hs_view *v, const hs_stack **out, size_t *n);

/* pprof's simplifyFunc (profile/prune.go), for prune regexes: a leading '.'
 * dropped, the name cut at the first '(' not part of "(anonymous
 * namespace)" or "operator()". Returns buf. */
const char *hs_an_simplify_func(const char *name, char *buf, size_t len);

#endif
