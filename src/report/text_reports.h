/* text_reports.h — the text reports built on the analysis view (analysis/):
 * top with every filter option, peek, tree, traces, list and diff. Each
 * prints exactly what `go tool pprof` prints for the same report where pprof
 * has one (-top, -peek, -tree, -traces, -list); diff is hotspur's own table.
 * Functions return 0, or -1 with a one-line message in err (write error, no
 * match for a regex). */
#ifndef HS_REPORT_TEXT_REPORTS_H
#define HS_REPORT_TEXT_REPORTS_H

#include "analysis/regex.h"
#include <stdbool.h>
#include <stdio.h>

#include "analysis/analysis.h"

/* Shared state of a graph-based text report: the chosen output unit. */
typedef struct {
    const hs_view *v;
    const hs_graph *g;           /* may be NULL (traces) */
    const hs_analysis_options *o;
    const char *sample_unit;
    const char *unit;            /* output unit ("minimum" when per value) */
    double ratio;                /* 1 / --divide-by */
} hs_text_ctx;

void hs_text_ctx_init(hs_text_ctx *c, const hs_view *v, const hs_graph *g,
                      const hs_analysis_options *o);
/* value in the report's unit */
char *hs_text_value(const hs_text_ctx *c, char *buf, size_t len, int64_t v);
/* File/Type/Time/Duration lines (pprof's ProfileLabels). */
int hs_text_profile_labels(FILE *out, const hs_text_ctx *c);
/* ProfileLabels + Active filters + Showing nodes... + Dropped N nodes (pprof's
 * reportLabels for text reports: dropped edges are not mentioned). */
int hs_text_report_labels(FILE *out, const hs_text_ctx *c);

/* The end of a report: 0 when everything reached out, else -1 with "error
 * writing output" in err. */
int hs_text_written(FILE *out, char *err, size_t errlen);

/* `top`: pprof's -top over a trimmed graph (kind HS_KIND_TOP). */
int hs_report_top_view(FILE *out, const hs_view *v, const hs_graph *g,
                       const hs_analysis_options *o, char *err, size_t errlen);
/* The compute step of peek/tree (report/peek.c): per matching node of g, in
 * g's order, its flat and cum and its callers' and callees' edge weights (net
 * of a base, as printed). */
typedef struct {
    uint32_t node;    /* the caller (in callers) or callee (in callees), a view node id */
    int64_t weight;
    bool inline_call; /* the callee was inlined into the caller */
} hs_peek_edge;
typedef struct {
    uint32_t node; /* view node id (v->nodes[node].name) */
    int64_t flat, cum;
    const hs_peek_edge *callers, *callees;
    size_t n_callers, n_callees;
} hs_peek_entry;
typedef struct {
    hs_peek_entry *entries;
    size_t n;
    hs_peek_edge *edges; /* storage of every entry's callers and callees */
} hs_peek;
/* match(name, arg) picks the nodes (NULL: all). 0, or -1 out of memory. */
typedef bool (*hs_peek_match)(const char *name, void *arg);
int hs_peek_compute(const hs_view *v, const hs_graph *g, hs_peek_match match, void *arg, hs_peek *out);
void hs_peek_free(hs_peek *p);

/* `tree` (rx NULL) and `peek RE` (rx set): callers and callees of each node
 * (hs_peek_compute, then printed as pprof's -tree/-peek). */
int hs_report_tree(FILE *out, const hs_view *v, const hs_graph *g, const hs_analysis_options *o,
                   const hs_regex *rx, const char *rx_text, char *err, size_t errlen);
/* `traces`: every kept sample with its labels, value and stack (leaf first). */
int hs_report_traces(FILE *out, const hs_view *v, const hs_analysis_options *o, char *err,
                     size_t errlen);
/* `tags`: per label key, the total and each value's share (pprof's -tags). */
int hs_report_tags(FILE *out, const hs_view *v, const hs_analysis_options *o, char *err,
                   size_t errlen);
/* `disasm RE`: per-instruction flat/cum of each sampled function matching rx,
 * disassembled from the binaries on disk with binutils (pprof's -disasm);
 * v built with --addresses granularity. */
int hs_report_disasm(FILE *out, const hs_view *v, const hs_analysis_options *o, const hs_regex *rx,
                     const char *rx_text, char *err, size_t errlen);
/* `raw`: the profile as pprof's -raw (Profile.String()) prints it. */
int hs_report_raw(FILE *out, const hs_profile *p, char *err, size_t errlen);
/* The compute step of list (report/list.c), also /api/v1/source's: per
 * (function, file) of the functions match(function, arg) picks (sorted by
 * function, then file), flat and cum (each sample once), pprof's line range
 * [start, stop] (start >= 1; clamp stop to the file) and the sampled lines
 * (ascending) with flat and cum, net of a base. The view is built at
 * --lines granularity. 0 (n 0: nothing matched), or -1 with err. */
typedef struct {
    int64_t line, flat, cum;
} hs_list_line;
typedef struct {
    const char *function, *file; /* the view's strings */
    int64_t flat, cum, start, stop;
    const hs_list_line *lines;
    size_t n_lines;
} hs_list_group;
typedef struct {
    hs_list_group *groups;
    size_t n;
    hs_list_line *lines; /* storage of every group's lines */
} hs_list;
typedef bool (*hs_list_match)(const char *function, void *arg);
int hs_list_compute(const hs_view *v, hs_list_match match, void *arg, hs_list *out, char *err,
                    size_t errlen);
void hs_list_free(hs_list *l);
/* `list RE`: annotated source of each function matching rx (view built with
 * --lines granularity). source_path: extra directory to search (may be NULL). */
int hs_report_list(FILE *out, const hs_view *v, const hs_analysis_options *o, const hs_regex *rx,
                   const char *rx_text, char *err, size_t errlen);
/* `diff BASE NEW`: per node base, new, delta, delta% (view built with a base).
 * s (may be NULL): a p column, s->p[node id] of the change across the
 * windows of each side (cli/diff_signif.c). */
typedef struct {
    const double *p;
    size_t base_windows, new_windows;
} hs_diff_pvalues;
int hs_report_diff(FILE *out, const hs_view *v, const hs_graph *g, const hs_analysis_options *o,
                   const hs_diff_pvalues *s, char *err, size_t errlen);

#endif
