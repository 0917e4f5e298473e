/* query_internal.h — what query.c (parameters, selections, the store side)
 * and query_shape.c (flame graph, function table, diff, source: the
 * analysis side) share. Private to src/server. */
#ifndef HS_SERVER_QUERY_INTERNAL_H
#define HS_SERVER_QUERY_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "server/server.h"

#define HS_Q_MAX_MULTI 64 /* versions or labels per selection */

/* One side of a query: what to select and how to add it up. */
typedef struct {
    hs_store_query q;
    const char *versions[HS_Q_MAX_MULTI];
    hs_store_label labels[HS_Q_MAX_MULTI];
    bool avg;      /* agg=avg: divide by the profiles merged */
    double weight; /* weight=P (0 < P <= 100), 0: every profile */
    const char *id; /* id=ID: only that profile (q.ids points here) */
    /* filled by hs_q_load */
    hs_store_merged merged;
    bool merged_ok;
    hs_profile *profile; /* the merged profile, rebuilt from stack records */
    hs_store_profile_row *wrows;
    size_t n_wrows;
    const char **ids;
} hs_q_side;

typedef struct {
    hs_query_ctx *qc;
    const hs_http_request *rq;
    hs_http_response *rs;
    hs_q_side cur, base;
    hs_store_types types;  /* of (service, type) */
    int sample_index;      /* in types */
    hs_analysis_options o; /* sample index, filters, granularity */
    bool filtered;         /* a filter parameter was given */
    bool agg_given;        /* agg= was given: else levels (inuse_*) average, flows sum */
    bool significance;     /* diff: significance=1, p-values across windows */
    bool base_given;       /* a base_X parameter was given (sandwich: a compare) */
    bool fn_files;         /* the view's nodes need their function's file (hs_q_view.files) */
    int max_nodes;
    int64_t step_s;
    size_t limit;
    const char *function;
    int64_t now_ns;
    char *owned[2 * HS_Q_MAX_MULTI + 8]; /* label keys */
    size_t n_owned;
} hs_q;

/* Merge side s in the store (s->merged; once), then (hs_q_load, for the
 * merged pprof answer only) rebuild its profile (s->profile). The status
 * of the error answer already set in q->rs, or 0. */
int hs_q_merge(hs_q *q, hs_q_side *s);
int hs_q_load(hs_q *q, hs_q_side *s);

/* The view of merged side cur (with base: the diff of cur against base)
 * built straight from the stack rows (query_view.c), as hs_view_build
 * would build it from the profiles. 0 with *out filled (free with
 * hs_q_view_free), else the HTTP status of the error in err. */
struct hs_q_view_priv;
typedef struct {
    hs_view *v;
    const char *const *build_ids; /* per node: an unnamed frame's object's build ID, or NULL */
    const char *const *files;     /* per node: its file, or (function granularity, with
                                     hs_q.fn_files) its function's first non-empty one */
    struct hs_q_view_priv *priv;
} hs_q_view;
int hs_q_view_build(hs_q *q, const hs_q_side *cur, const hs_q_side *base, hs_q_view *out, char *err,
                    size_t errlen);
void hs_q_view_free(hs_q_view *v);

/* A profile with sample types t and no samples (what a rebuild of an
 * empty merge gives); NULL on out of memory. */
hs_profile *hs_q_types_profile(const hs_store_types *t);

/* A value as JSON: exact for sums, divided for agg=avg. */
void hs_q_value(FILE *f, int64_t v, int64_t div);
/* The divisor of side s (its number of profiles with agg=avg, else 1). */
int64_t hs_q_div(const hs_q_side *s);

/* Start a JSON answer in a memory stream; hs_q_finish hands it to rs. */
FILE *hs_q_open(char **buf, size_t *len);
int hs_q_finish(hs_q *q, FILE *f, char **buf, size_t *len);
/* Set a 500 for an analysis error (message in err). */
int hs_q_fail(hs_q *q, int status, const char *what, const char *err);

/* The fields every profile answer starts with: profiles, agg, sample_type,
 * unit (no braces). */
void hs_q_header(hs_q *q, FILE *f, const char *sample_type, const char *unit);

/* The endpoints built on the analysis layer (query_shape.c). */
int hs_q_flamegraph(hs_q *q);
int hs_q_functions(hs_q *q);
int hs_q_diff(hs_q *q);
int hs_q_source(hs_q *q);
int hs_q_peek(hs_q *q);
int hs_q_sandwich(hs_q *q);

#endif
