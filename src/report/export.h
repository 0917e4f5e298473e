/* export.h — the graphical reports (flame graph HTML, differential flame
 * graph, DOT call graph) and the exporters/importers between hs_profile and
 * the formats people already have (FlameGraph collapsed stacks, callgrind,
 * speedscope JSON, `perf script` text).
 *
 * The reports read an hs_view (analysis/: filters and granularity applied);
 * so do the exporters (pprof output is hs_analysis_filter_profile's job).
 * All return 0 on success or -1 with a one-line message in err. Writers check the stream: a failed
 * write is an error. Importers never crash on hostile input: anything that
 * is not well-formed gives NULL and a message naming the line.
 */
#ifndef HS_REPORT_EXPORT_H
#define HS_REPORT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "profile/profile.h"

/* ---- flame graphs (flame.c; template src/report/flame.html) ---- */

/* A self-contained interactive HTML flame graph of the view's call tree
 * (filters and granularity already applied by hs_view_build). */
int hs_report_flame(const hs_view *v, const char *title, FILE *out, char *err, size_t errlen);
/* The same with one of FlameGraph's palettes: "hot" (default), "mem", "io". */
int hs_report_flame_ex(const hs_view *v, const char *title, const char *palette, FILE *out,
                       char *err, size_t errlen);

/* A differential flame graph of a view built with a BASE (v->diff): frame
 * widths from NEW, colour by the change (red grew, blue shrank), stacks
 * present only in BASE drawn as thin markers and shown with the "Base
 * widths" toggle; tooltips give both values and the delta. --normalize is
 * applied by the view. */
int hs_report_flame_diff(const hs_view *v, const char *title, FILE *out, char *err,
                         size_t errlen);

/* ---- call graph in DOT (graph.c) ---- */

/* The call graph of v in Graphviz DOT, trimmed with o's nodecount,
 * nodefraction and edgefraction (call hs_analysis_apply_defaults(o,
 * HS_KIND_GRAPH) first): font size by flat, colour by cum, edge width and
 * colour by weight, dotted edges over trimmed nodes. title may be NULL. */
int hs_report_graph(const hs_view *v, const hs_analysis_options *o, const char *title, FILE *out,
                    char *err, size_t errlen);

/* ---- exporters ---- */

/* FlameGraph folded stacks: "root;caller;leaf value", one line per distinct
 * stack (stacks with a zero sum are omitted), siblings in name order. */
int hs_export_collapsed(const hs_view *v, FILE *out, char *err, size_t errlen);

/* callgrind format (callgrind_annotate, KCachegrind): one event, the view's
 * sample type; self cost per function and line, calls with inclusive cost.
 * Build the view with --lines granularity to get per-line positions; a
 * function is a node's function name (its printable name when it has
 * none), so per-function costs equal `top`'s at function granularity. */
int hs_export_callgrind(const hs_view *v, FILE *out, char *err, size_t errlen);
/* The same, gathering at most pass_calls calls per pass over the stacks
 * (0: the default, 448 Ki; never fewer than one position makes), on
 * `threads` threads (1 or 2; 0: two unless the view is small). The output
 * depends on neither: tests compare small passes with one, one thread
 * with two. */
int hs_export_callgrind_ex(const hs_view *v, FILE *out, size_t pass_calls, unsigned threads,
                           char *err, size_t errlen);

/* speedscope JSON, one "sampled" profile with the view's sample type. */
int hs_export_speedscope(const hs_view *v, const char *name, FILE *out, char *err,
                         size_t errlen);
/* speedscope JSON with one "sampled" profile per view (one per sample type),
 * frames shared (numbered as they first appear in the active view's call
 * tree, then in the others' in order); `active` is the profile speedscope
 * opens first. */
int hs_export_speedscope_multi(const hs_view *const *vs, size_t nv, size_t active,
                               const char *name, FILE *out, char *err, size_t errlen);
/* speedscope JSON with one "sampled" profile per sample type of v's
 * profiles ps[0..n) (the views at the other indexes made with
 * hs_view_at_index, on a thread while v's frames are found); v's is
 * active. Frames are numbered as they first appear in v's call tree, then
 * in the others' in index order. */
int hs_export_speedscope_types(const hs_view *v, hs_profile *const *ps, size_t n,
                               const hs_analysis_options *o, const char *name, FILE *out,
                               char *err, size_t errlen);

/* ---- importers ---- */

/* Folded stacks ("a;b;c 12" per line; frames may contain spaces, the count
 * is the last field) to a profile with one sample type, samples/count. */
hs_profile *hs_import_collapsed(const char *data, size_t len, char *err, size_t errlen);

/* Collapsed imports read together (diff, merge, --base, several inputs)
 * whose counts have different decimals (1 vs 0.5: units count and
 * count/10) are brought to the most decimals of them, so they compare and
 * merge. Does nothing unless every profile is such an import. 0, or -1
 * with a message (a count that no longer fits). */
int hs_collapsed_align(hs_profile *const *ps, size_t n, char *err, size_t errlen);

/* `perf script` text: a header line per sample (comm pid/tid [cpu] time:
 * [period] event:), its frames indented ("addr sym+off (dso)"), samples
 * separated by blank lines. Sample types samples/count and, when perf
 * printed periods, event/count with the period. Labels pid, tid, comm. */
hs_profile *hs_import_perf_script(const char *data, size_t len, char *err, size_t errlen);

/* Guess the format of data: "pprof", "collapsed", "perf-script" or NULL. */
const char *hs_import_detect(const char *data, size_t len);

#endif
