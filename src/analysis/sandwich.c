/* sandwich.c — the callers/callees view of one function from a call tree
 * (sandwich.h). Each tree node with a self value is one stack (the path
 * from the root to it, that value); a stack through the function gives the
 * callees tree the path from the function's outermost occurrence down, and
 * the callers tree the path from it up, reversed. Both are built by
 * hs_calltree_build_stacks, so they sort and merge as the flame graph does. */
#include <stdlib.h>
#include <string.h>

#include "analysis/sandwich.h"
#include "base/err.h"
#include "base/vec.h"

static int64_t add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

void hs_sandwich_free(hs_sandwich *s)
{
    hs_calltree_free(&s->callers);
    hs_calltree_free(&s->callees);
    memset(s, 0, sizeof *s);
}

static size_t count_children(const hs_calltree *t, uint32_t n)
{
    size_t k = 0;
    for (uint32_t c = t->t[n].first_child; c; c = t->t[c].next_sibling)
        k++;
    return k;
}

int hs_sandwich_build(const hs_calltree *ct, const hs_node *nodes, bool (*is_fn)(const hs_node *n, void *arg),
                      void *arg, hs_sandwich *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (ct->n == 0)
        return 1;
    /* the walk: tree index of each depth's node on the current path, and
     * the depth of the path's outermost occurrence (0: none; the root is
     * never the function) */
    uint32_t *path = malloc(ct->n * sizeof *path);
    uint32_t *outer = malloc(ct->n * sizeof *outer);
    uint32_t *todo = malloc(ct->n * sizeof *todo);
    uint8_t *match = calloc(ct->n, 1);
    hs_stack *below = NULL, *above = NULL;
    uint32_t *arena = NULL;
    size_t n_stacks = 0, cap_below = 0, cap_above = 0, n_arena = 0, cap_arena = 0;
    int rc = -1;
    if (!path || !outer || !todo || !match)
        goto done;
    /* one name may be several node ids: every match is the first one's id,
     * so both trees have one top */
    uint32_t canon = HS_NODE_NONE;
    for (size_t i = 1; i < ct->n; i++) {
        match[i] = is_fn(&nodes[ct->t[i].node], arg);
        if (match[i] && canon == HS_NODE_NONE)
            canon = ct->t[i].node;
    }
    size_t sp = 0;
    todo[sp++] = 0;
    while (sp) {
        uint32_t i = todo[--sp];
        const hs_tree_node *tn = &ct->t[i];
        uint32_t d = tn->depth;
        path[d] = i;
        outer[d] = d == 0 ? 0 : outer[d - 1] ? outer[d - 1] : match[i] ? d : 0;
        if (match[i]) {
            out->self = add(out->self, tn->self);
            out->base_self = add(out->base_self, tn->base_self);
        }
        for (uint32_t c = tn->first_child; c; c = ct->t[c].next_sibling)
            todo[sp++] = c;
        uint32_t od = outer[d];
        if (!od || (tn->self == 0 && tn->base_self == 0))
            continue;
        /* below: path[od..d]; above: path[od], path[od-1], ..., path[1] */
        size_t need = (d - od + 1) + od;
        if (hs_vec_reserve((void **)&arena, &cap_arena, n_arena + need, sizeof *arena) < 0 ||
            hs_vec_reserve((void **)&below, &cap_below, n_stacks + 1, sizeof *below) < 0 ||
            hs_vec_reserve((void **)&above, &cap_above, n_stacks + 1, sizeof *above) < 0)
            goto done;
        /* offsets for now: the arena may still move */
        below[n_stacks] = (hs_stack){.nodes = (const uint32_t *)(uintptr_t)n_arena, .n = d - od + 1,
                                     .value = tn->self, .base = tn->base_self};
        for (uint32_t k = od; k <= d; k++)
            arena[n_arena++] = match[path[k]] ? canon : ct->t[path[k]].node;
        above[n_stacks] = (hs_stack){.nodes = (const uint32_t *)(uintptr_t)n_arena, .n = od,
                                     .value = tn->self, .base = tn->base_self};
        for (uint32_t k = od; k >= 1; k--)
            arena[n_arena++] = match[path[k]] ? canon : ct->t[path[k]].node;
        n_stacks++;
    }
    if (n_stacks == 0) {
        rc = 1;
        goto done;
    }
    for (size_t s = 0; s < n_stacks; s++) {
        below[s].nodes = arena + (uintptr_t)below[s].nodes;
        above[s].nodes = arena + (uintptr_t)above[s].nodes;
    }
    if (hs_calltree_build_stacks(below, n_stacks, nodes, &out->callees, err, errlen) < 0 ||
        hs_calltree_build_stacks(above, n_stacks, nodes, &out->callers, err, errlen) < 0) {
        hs_sandwich_free(out);
        rc = -2;
        goto done;
    }
    /* every stack starts at canon: the root's only child */
    out->callees_top = out->callees.t[0].first_child;
    out->callers_top = out->callers.t[0].first_child;
    out->total = out->callees.t[0].total;
    out->base_total = out->callees.t[0].base_total;
    out->n_callees = count_children(&out->callees, out->callees_top);
    out->n_callers = count_children(&out->callers, out->callers_top);
    rc = 0;
done:
    if (rc == -1)
        hs_err(err, errlen, "out of memory");
    free(path);
    free(outer);
    free(todo);
    free(match);
    free(below);
    free(above);
    free(arena);
    return rc < 0 ? -1 : rc;
}
