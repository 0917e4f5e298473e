/* view_internal.h — what view.c (the build) and view_derive.c (views
 * derived from a built one, identical stacks summed) share: the view's
 * private half and a sample's identity for merging. */
#ifndef HS_ANALYSIS_VIEW_INTERNAL_H
#define HS_ANALYSIS_VIEW_INTERNAL_H

#include <string.h>

#include "analysis/analysis_internal.h"

struct hs_view_private {
    hs_strtab strs;
    hs_node *nodes;
    size_t n_nodes, cap_nodes;
    hs_idmap node_map;
    hs_stack *stacks;
    size_t n_stacks, cap_stacks;
    uint32_t *arena;
    uint8_t *inl_arena;
    size_t arena_n, arena_cap;
    char *warnings;
    size_t warn_len;
    hs_stack *ustacks; /* identical stacks summed (hs_an_view_unique) */
    size_t n_ustacks;
    bool ustacks_done;
};

typedef struct {
    hs_view pub;
    struct hs_view_private priv;
    bool obj_names; /* hs_analysis_options.obj_names */
    const char *trim_path, *source_path; /* during hs_view_build only */
    bool untrimmed;
    bool has_tagshow, has_taghide;
    hs_regex tagshow, taghide;
    int64_t div_total, base_div_total; /* --mean: sum of the counts */
    int64_t diff_total, diff_div;      /* over samples labelled pprof::base (--diff-base) */
    bool has_diff;
    bool each_sample; /* hs_analysis_options.each_sample */
} view_full;

/* Identity of a sample for merging: its location id array (by address:
 * the decoder shares the arrays of byte-identical stacks) and its labels. */
static inline uint64_t hs_an_sample_hash(const hs_sample *S)
{
    uint64_t h = hs_mix64((uint64_t)(uintptr_t)S->location_ids ^ ((uint64_t)S->n_locations << 48));
    if (S->n_labels)
        h ^= hs_hmap_hash_bytes(S->labels, S->n_labels * sizeof *S->labels, h);
    return h;
}

static inline bool hs_an_same_sample(const hs_sample *a, const hs_sample *b)
{
    return a->location_ids == b->location_ids && a->n_locations == b->n_locations &&
           a->n_labels == b->n_labels &&
           (a->n_labels == 0 || memcmp(a->labels, b->labels, a->n_labels * sizeof *a->labels) == 0);
}

/* What the view build (view.c) and hs_analysis_filter_profile (filter_profile.c)
 * share: the filters' decisions per function, mapping and location. */

/* per-location decisions */
typedef struct {
    uint32_t off, n; /* node list in the per-profile lists, root first */
    uint8_t dec;     /* HS_LOC_* (filters.h) */
} loc_info;

typedef struct {
    const hs_profile *p;
    const hs_an_filters *f;
    hs_granularity gran;
    bool obj_names;
    const char *trim_path, *source_path; /* --trim-path, --source-path */
    bool untrimmed;                      /* --trim-path does not apply */
    uint8_t *fmatch;   /* per function index */
    uint8_t *mmatch;   /* per mapping index */
    loc_info *li;      /* per location index */
    uint32_t *lists;   /* node lists */
    uint8_t *inls;
    size_t n_lists, cap_lists;
    bool fm, im, hm, hnm, sfm; /* "matched something" flags */
    uint8_t **keepmask;        /* optional: per location, kept lines (filter_profile) */
    uint32_t most_nodes;       /* the longest node list of a location */
    bool dense;                /* hs_profile_locations_dense(p) */
} prof_ctx;

static inline const hs_function *hs_an_line_fn(const hs_profile *p, const hs_line *l)
{
    return l->function_id ? hs_profile_function(p, l->function_id) : NULL;
}

typedef struct {
    const hs_location **locs;
    uint8_t *dec;
    uint32_t *pos;
    size_t cap;
} keep_buf;

/* The filters' matches of every function (name or file) and mapping. */
int hs_an_compute_matches(prof_ctx *c);
/* Each location's decision and node list (c->li, c->lists). */
int hs_an_compute_locations(prof_ctx *c, struct hs_view_private *pv);
int hs_an_keep_buf_reserve(keep_buf *b, size_t n);
void hs_an_keep_buf_free(keep_buf *b);
/* The filters on one sample: false when dropped; else b->locs[0..*np) are
 * its kept locations, leaf first. b has room for S->n_locations. */
bool hs_an_sample_keep(const prof_ctx *c, const hs_sample *S, keep_buf *b, size_t *np);

#endif
