/* sandwich.h — the callers/callees ("sandwich") view of one function, from
 * a call tree: every path through the function is merged at it. The web
 * UI's Callers / callees tab reads it from /api/v1/sandwich. */
#ifndef HS_ANALYSIS_SANDWICH_H
#define HS_ANALYSIS_SANDWICH_H

#include <stdbool.h>

#include "analysis/analysis.h"

typedef struct {
    /* Both trees have the function as the single child of their root
     * (t[0]); `top` is that node's index. Callees: the paths below its
     * outermost occurrence on each stack, merged by node. Callers: the
     * paths above it, read upwards (its parent is the first level). */
    hs_calltree callers, callees;
    uint32_t callers_top, callees_top;
    /* over the stacks through the function (counted once, at the outermost
     * occurrence), and self over every occurrence (recursive ones included) */
    int64_t total, base_total;
    int64_t self, base_self;
    size_t n_callers, n_callees; /* distinct direct callers and callees */
} hs_sandwich;

/* The sandwich of the nodes for which is_fn(nodes[id], arg) holds, over
 * tree ct (whose node ids index nodes). Returns 1 when no stack goes
 * through such a node (out is empty), 0 on success, -1 on out of memory
 * (err says so). Free with hs_sandwich_free. */
int hs_sandwich_build(const hs_calltree *ct, const hs_node *nodes, bool (*is_fn)(const hs_node *n, void *arg),
                      void *arg, hs_sandwich *out, char *err, size_t errlen);
void hs_sandwich_free(hs_sandwich *s);

#endif
