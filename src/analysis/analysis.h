/* analysis.h — the model transforms every report shares: sample index,
 * merge, filters, granularity, the call tree and the call graph.
 *
 * Semantics follow pprof (google/pprof driver + profile + graph packages):
 *  - --sample-index NAME|N picks one value of each sample (default: the
 *    profile's default sample type, else the last);
 *  - --focus/--ignore match a location when any of its lines' function
 *    name or file name, or its mapping's file, matches (unanchored POSIX
 *    ERE); a sample is kept when some location matches focus and none
 *    matches ignore;
 *  - --hide drops matching lines (frames) from locations, --show keeps only
 *    matching lines; samples left with no frames are dropped;
 *  - --show-from drops every frame above (callers of) the outermost
 *    frame whose function or file name matches; samples with no match are
 *    dropped;
 *  - --tagfocus/--tagignore KEY=VALUE (VALUE: comma-separated regexes, or a
 *    numeric range "LO:HI" with units, e.g. "1kb:", "10ms:1s", "32")
 *    filter samples by label;
 *  - granularity --functions (default) / --files / --lines / --addresses
 *    decides what a node is, and its printable name (pprof's NameComponents);
 *  - the report total is computed before filtering (sum of |value|), so
 *    percentages are of the whole profile, as in pprof;
 *  - cum counts each node once per sample even under recursion; each edge
 *    once per sample too.
 * Regexes are evaluated once per distinct location, never per sample.
 *
 * Usage (a report command; cli/cli_options.h reads argv into o, through
 * HS_ANALYSIS_LONGOPTS and hs_analysis_parse_option below):
 *     hs_analysis_options o;
 *     int rc = hs_cli_parse(&spec, argc, argv, &o, ctx, &output, &first);
 *     if (rc >= 0) return rc;   // --help, or a usage error already printed
 *     hs_view *v = hs_view_build(profiles, n, NULL, 0, &o, err, sizeof err);
 *     ... v->stacks, hs_calltree_build(v, ...), hs_graph_build(v, &o, ...)
 *     hs_view_free(v); hs_analysis_options_free(&o);
 * Errors are return values (NULL / -1) with a one-line message in err.
 */
#ifndef HS_ANALYSIS_H
#define HS_ANALYSIS_H

#include <getopt.h>
#include "analysis/regex.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/strtab.h"
#include "profile/profile.h"

/* ------------------------------------------------------------------ */
/* options                                                             */
/* ------------------------------------------------------------------ */

typedef enum {
    HS_GRAN_FUNCTIONS = 0, /* default: one node per function name */
    HS_GRAN_FILES,         /* one node per source file */
    HS_GRAN_LINES,         /* one node per function + file:line */
    HS_GRAN_ADDRESSES,     /* one node per address (+ function, file:line) */
} hs_granularity;

/* Which report the trimming defaults are for (pprof's applyCommandOverrides). */
typedef enum {
    HS_KIND_TOP = 0, /* nodecount: all; nodefraction 0.005, edgefraction 0.001 */
    HS_KIND_GRAPH,   /* graph/tree: nodecount 80, same fractions */
    HS_KIND_NOTRIM,  /* peek/list/traces/flame/convert: no trimming at all */
} hs_report_kind;

typedef struct {
    char *sample_index; /* NULL: the profile's default */
    char *focus, *ignore, *show, *hide, *show_from; /* NULL: unset */
    char *prune_from;                               /* --prune-from RE, NULL: unset */
    bool noinlines;         /* --noinlines: inlined frames merged into their caller */
    char **base;            /* --base FILE (repeatable): profiles subtracted, as pprof's -base */
    size_t n_base;
    bool diff_base;         /* the --base files came as --diff-base (pprof's -diff_base):
                               their samples are marked and percentages are of their total */
    char *tagfocus, *tagignore;                     /* NULL: unset */
    int nodecount;          /* -1: report default; 0: no limit */
    double nodefraction;    /* < 0: report default (0.005) */
    double edgefraction;    /* < 0: report default (0.001) */
    hs_granularity granularity;
    bool granularity_set;   /* a granularity flag was given */
    bool cum_sort;          /* --cum: sort by cum instead of flat */
    bool relative;          /* --relative-percentages: total after filters */
    bool normalize;         /* --normalize (diff): scale NEW to BASE's total */
    char *source_path;      /* --source-path DIR (list) */
    bool obj_names;         /* nodes keep the object file and function start
                               line, as pprof's ObjNames (list, callgrind) */
    char *unit;             /* --unit U: output unit (ms, MB, auto, ...); NULL: minimum */
    double divide_by;       /* --divide-by R: values printed divided by R (1: none) */
    bool mean;              /* --mean: each node's value divided by its count
                               (sample value 0), as pprof's -mean */
    bool drop_negative;     /* --drop-negative: drop nodes whose value is negative */
    char *tagshow, *taghide; /* --tagshow/--taghide RE: label keys shown / hidden */
    bool call_tree;         /* --call-tree (graph): a node per call path */
    bool compact_labels;    /* --compact-labels (graph): legend without profile labels */
    char *trim_path;        /* --trim-path P[:P...]: prefixes removed from file names */
    bool untrimmed_paths;   /* file names as in the profile, no trimming at all (traces,
                               as pprof's printTraces, which does not build a graph) */
    bool each_sample;       /* one view stack per sample, in profile order (traces);
                               else identical samples are summed into one stack */
} hs_analysis_options;

/* Option codes of the shared options (beyond any short option char). */
enum {
    HS_OPT_SAMPLE_INDEX = 0x4800,
    HS_OPT_FOCUS,
    HS_OPT_IGNORE,
    HS_OPT_SHOW,
    HS_OPT_HIDE,
    HS_OPT_SHOW_FROM,
    HS_OPT_TAGFOCUS,
    HS_OPT_TAGIGNORE,
    HS_OPT_NODECOUNT,
    HS_OPT_NODEFRACTION,
    HS_OPT_EDGEFRACTION,
    HS_OPT_FUNCTIONS,
    HS_OPT_FILES,
    HS_OPT_LINES,
    HS_OPT_ADDRESSES,
    HS_OPT_CUM,
    HS_OPT_RELATIVE,
    HS_OPT_NORMALIZE,
    HS_OPT_SOURCE_PATH,
    HS_OPT_PRUNE_FROM,
    HS_OPT_NOINLINES,
    HS_OPT_BASE,
    HS_OPT_UNIT,
    HS_OPT_DIVIDE_BY,
    HS_OPT_MEAN,
    HS_OPT_DROP_NEGATIVE,
    HS_OPT_TAGSHOW,
    HS_OPT_TAGHIDE,
    HS_OPT_TRIM_PATH,
    HS_OPT_DIFF_BASE,
    HS_OPT__END
};

/* The shared long options, spliced by cli/cli_options.c into the option
 * table of each command that takes some. --normalize and --source-path are
 * here too; the commands that do not use them reject them there
 * (hs_analysis_parse_option accepts them all). */
#define HS_ANALYSIS_LONGOPTS                                                                       \
    {"sample-index", required_argument, NULL, HS_OPT_SAMPLE_INDEX},                                \
        {"focus", required_argument, NULL, HS_OPT_FOCUS},                                          \
        {"ignore", required_argument, NULL, HS_OPT_IGNORE},                                        \
        {"show", required_argument, NULL, HS_OPT_SHOW},                                            \
        {"hide", required_argument, NULL, HS_OPT_HIDE},                                            \
        {"show-from", required_argument, NULL, HS_OPT_SHOW_FROM},                                  \
        {"tagfocus", required_argument, NULL, HS_OPT_TAGFOCUS},                                    \
        {"tagignore", required_argument, NULL, HS_OPT_TAGIGNORE},                                  \
        {"nodecount", required_argument, NULL, HS_OPT_NODECOUNT},                                  \
        {"nodefraction", required_argument, NULL, HS_OPT_NODEFRACTION},                            \
        {"edgefraction", required_argument, NULL, HS_OPT_EDGEFRACTION},                            \
        {"functions", no_argument, NULL, HS_OPT_FUNCTIONS},                                        \
        {"files", no_argument, NULL, HS_OPT_FILES},                                                \
        {"lines", no_argument, NULL, HS_OPT_LINES},                                                \
        {"addresses", no_argument, NULL, HS_OPT_ADDRESSES},                                        \
        {"cum", no_argument, NULL, HS_OPT_CUM},                                                    \
        {"relative-percentages", no_argument, NULL, HS_OPT_RELATIVE},                              \
        {"normalize", no_argument, NULL, HS_OPT_NORMALIZE},                                        \
        {"source-path", required_argument, NULL, HS_OPT_SOURCE_PATH},                              \
        {"prune-from", required_argument, NULL, HS_OPT_PRUNE_FROM},                                \
        {"noinlines", no_argument, NULL, HS_OPT_NOINLINES},                                        \
        {"base", required_argument, NULL, HS_OPT_BASE},                                            \
        {"unit", required_argument, NULL, HS_OPT_UNIT},                                            \
        {"divide-by", required_argument, NULL, HS_OPT_DIVIDE_BY},                                  \
        {"mean", no_argument, NULL, HS_OPT_MEAN},                                                  \
        {"drop-negative", no_argument, NULL, HS_OPT_DROP_NEGATIVE},                                \
        {"tagshow", required_argument, NULL, HS_OPT_TAGSHOW},                                      \
        {"taghide", required_argument, NULL, HS_OPT_TAGHIDE},                                      \
        {"trim-path", required_argument, NULL, HS_OPT_TRIM_PATH},                                  \
        {"diff-base", required_argument, NULL, HS_OPT_DIFF_BASE}

void hs_analysis_options_init(hs_analysis_options *o);
void hs_analysis_options_free(hs_analysis_options *o);

/* Handle one shared option. Returns 1 when `code` is a shared option
 * (stored in o), 0 when it is not ours (the caller handles it), -1 when its
 * argument is invalid (bad regex, bad number; message in err). Regexes are
 * compiled here once to report errors early. */
int hs_analysis_parse_option(hs_analysis_options *o, int code, const char *arg, char *err,
                             size_t errlen);

/* Print the help lines of the shared filter options (for a command's --help).
 * `kind` selects which trimming defaults are described. --normalize and
 * --source-path are not listed: commands taking them describe them. */
void hs_analysis_options_help(FILE *out, hs_report_kind kind);

/* Effective trimming for a report kind: fills nodecount/nodefraction/
 * edgefraction where they are unset (-1 / < 0) as pprof does. */
void hs_analysis_apply_defaults(hs_analysis_options *o, hs_report_kind kind);

/* ------------------------------------------------------------------ */
/* merge                                                               */
/* ------------------------------------------------------------------ */

/* Merge profiles of the same type (same sample types, in order) into a new
 * profile: identical stacks+labels are summed, functions/locations/mappings
 * deduplicated. NULL with a message when types differ or out of memory. */
hs_profile *hs_analysis_merge(hs_profile *const *ps, size_t n, char *err, size_t errlen);
/* The same, with every sample of ps[first_marked..n) labelled
 * pprof::base=true, as pprof marks a -diff_base profile. */
hs_profile *hs_analysis_merge_marked(hs_profile *const *ps, size_t n, size_t first_marked,
                                     char *err, size_t errlen);
/* Apply the profile's own drop_frames/keep_frames in place, as pprof's
 * RemoveUninteresting does on load (nothing when drop_frames is unset).
 * 0, or -1 with a message (a regex that does not compile). */
int hs_analysis_remove_uninteresting(hs_profile *p, char *err, size_t errlen);
/* Negate every value of p (pprof's Scale(-1)): merging a negated base into
 * a profile subtracts it (--base). */
void hs_analysis_negate(hs_profile *p);

/* ------------------------------------------------------------------ */
/* the filtered view: nodes and stacks                                 */
/* ------------------------------------------------------------------ */

#define HS_NODE_NONE UINT32_MAX

/* A node: a function, file, line or address depending on granularity. */
typedef struct {
    const char *name;     /* printable name, as pprof's PrintableName() */
    const char *function; /* function name, "" when none / not part of the node */
    const char *file;     /* source file, "" when none / not part of the node */
    const char *objfile;  /* mapping file when the node has no function name, else "" */
    int64_t line;         /* source line (lines/addresses granularity), else 0 */
    int64_t start_line;   /* function start line when known, else 0 */
    uint64_t address;     /* addresses granularity, else 0 */
} hs_node;

/* One sample after filters: its stack as node ids, ROOT FIRST (nodes[0] is
 * the outermost caller, nodes[n-1] the leaf). A location with inlined calls
 * contributes several nodes; inl[i] is true when nodes[i] was inlined into
 * nodes[i-1] (same location). A sample of the NEW (or only) profile has
 * value set and base 0; a sample of the BASE profile (diff) has base set and
 * value 0. Value is already normalized (diff --normalize). */
typedef struct {
    const uint32_t *nodes;
    const uint8_t *inl;
    uint32_t n;
    uint32_t n_samples;        /* samples summed into this stack: identical
                                  ones (same stack and labels) are merged
                                  unless hs_analysis_options.each_sample */
    int64_t value;
    int64_t base;
    int64_t div;               /* --mean: the sample's count (value 0), else 0 */
    const hs_profile *profile; /* where the sample came from (for labels) */
    const hs_sample *sample;
} hs_stack;

typedef struct hs_view_private hs_view_private;

typedef struct {
    const char *sample_type; /* e.g. "cpu" */
    const char *unit;        /* e.g. "nanoseconds" */
    int sample_index;        /* in the (first) NEW profile */
    hs_granularity granularity;

    const hs_node *nodes; /* node id -> node */
    size_t n_nodes;
    const hs_stack *stacks; /* kept samples, in profile order (NEW then BASE) */
    size_t n_stacks;

    /* pprof's report total: sum |value| over NEW samples before filters
     * (after filters with --relative-percentages). */
    int64_t total;
    int64_t base_total;    /* the same over BASE samples (diff), else 0 */
    int64_t kept_total;    /* sum of value over kept NEW stacks */
    int64_t kept_base;     /* sum of base over kept BASE stacks */
    bool diff;             /* built with a BASE */
    bool mean;             /* --mean: graph values are value / count */

    /* Warnings like pprof's "no matches found for regexp: X", one per line,
     * "" when none. Reports print them on stderr. */
    const char *warnings;

    const hs_profile *profile; /* the (merged) NEW profile, unfiltered */
    const hs_profile *base;    /* the (merged) BASE profile, or NULL */
    hs_view_private *priv;
} hs_view;

/* Build the view of NEW profiles `ps` (merged when n > 1) and, for diffs,
 * BASE profiles `bs` (n_base > 0). Profiles must share sample types with the
 * same name at the selected index; they are borrowed and must outlive the
 * view. NULL with a one-line message on error (no such sample index,
 * incompatible profiles, bad regex, out of memory). */
hs_view *hs_view_build(hs_profile *const *ps, size_t n, hs_profile *const *bs, size_t n_base,
                       const hs_analysis_options *o, char *err, size_t errlen);
void hs_view_free(hs_view *v);

/* A view from nodes and stacks that another stack source built with the
 * view's rules (analysis/filters.h): the server's stored stack rows
 * (server/query_view.c). The view takes what parts holds (its string
 * table, which the nodes' and the two type strings' pointers are into, and
 * the arrays: all malloc'd), even when it fails (NULL: out of memory).
 * Stacks have no profile or sample (labels are not kept): the reports of
 * values, trees, graphs, callers and source lines all work on it. */
typedef struct {
    hs_strtab strs;
    hs_node *nodes;
    size_t n_nodes;
    hs_stack *stacks; /* .nodes and .inl into the arenas */
    size_t n_stacks;
    uint32_t *arena;
    uint8_t *inl_arena;
    const char *sample_type, *unit;
    int sample_index;
    hs_granularity granularity;
    int64_t total, base_total, kept_total, kept_base;
    bool diff;
} hs_view_parts;
hs_view *hs_view_from_parts(hs_view_parts *parts);

/* The view as a call tree (pprof's -call_tree): one node per distinct call
 * path, so a function reached from two callers is two nodes; node names
 * are borrowed from src, which must outlive the result. NULL with a
 * message on out of memory. */
hs_view *hs_view_call_tree(const hs_view *src, char *err, size_t errlen);

/* The view with every stack reversed, leaf first (flame --reverse: stacks
 * merged at their leaves). Nodes are src's, which must outlive it. NULL
 * with a message on out of memory. */
hs_view *hs_view_reversed(const hs_view *src, char *err, size_t errlen);

/* src, built by hs_view_build from ps[0..n) with options o, at sample
 * index si instead: the same nodes and stacks (src's, which must outlive
 * the result), each stack's value summed from index si of its samples,
 * without running the filters again. When a view at si would group the
 * samples differently (negative values, --mean, --relative-percentages,
 * --tagshow/--taghide, a diff) it is built anew. NULL with a message on
 * error. */
hs_view *hs_view_at_index(const hs_view *src, hs_profile *const *ps, size_t n,
                          const hs_analysis_options *o, int si, char *err, size_t errlen);

/* Whether a label with this key is shown under --tagshow/--taghide
 * (pprof's FilterTagsByName); true when neither is set. */
bool hs_view_label_shown(const hs_view *v, const char *key);

/* pprof's trimPath: the part of `path` left after removing the first of
 * trim's ':'-separated prefixes (or /proc/self/cwd/) it starts with; when
 * trim is NULL/empty, after the first "/BASENAME/" of a source_path
 * directory found in path. Returns a suffix of path. */
const char *hs_analysis_trim_path(const char *path, const char *trim, const char *source_path);

/* Apply sample-index-independent filters (focus/ignore/show/hide/show-from/
 * tagfocus/tagignore) to p and return a NEW profile holding only the kept
 * samples with their hidden frames removed (locations rewritten), for code
 * that wants an hs_profile (exporters). Granularity is not applied. NULL
 * with a message on error. */
hs_profile *hs_analysis_filter_profile(const hs_profile *p, const hs_analysis_options *o,
                                       char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* call tree (flame graphs, tree)                                      */
/* ------------------------------------------------------------------ */

/* Tree node 0 is the virtual root (node == HS_NODE_NONE). Children are
 * linked by first_child/next_sibling (0 = none), sorted by total descending
 * (then name). self = value of stacks ending here, total = value of stacks
 * through here; base_* the same for BASE stacks. */
typedef struct {
    uint32_t node;
    uint32_t parent;
    uint32_t first_child;
    uint32_t next_sibling;
    uint32_t depth; /* root 0 */
    int64_t self, total;
    int64_t base_self, base_total;
} hs_tree_node;

typedef struct {
    hs_tree_node *t;
    size_t n;
} hs_calltree;

int hs_calltree_build(const hs_view *v, hs_calltree *out, char *err, size_t errlen);
/* The same from stacks given directly (root first; inl is not read):
 * nodes[] names the node ids the stacks use (children with equal totals
 * are sorted by name). Identical stacks may repeat (they are summed);
 * stacks of value 0 and base 0 are left out. For a producer of stacks
 * that is not an hs_view (the server's flame graph from stack records). */
int hs_calltree_build_stacks(const hs_stack *stacks, size_t n_stacks, const hs_node *nodes, hs_calltree *out,
                             char *err, size_t errlen);
void hs_calltree_free(hs_calltree *t);

/* The same tree walked without building it (flame, collapsed, speedscope):
 * its nodes, in the pre-order of a walk of hs_calltree (children sorted by
 * total descending, then name, then creation order), come from v's
 * distinct stacks grouped level by level, so memory is in the number of
 * distinct stacks and the depth, not in the number of tree nodes. */
typedef struct {
    uint32_t node;  /* view node id; HS_NODE_NONE for the root */
    uint32_t depth; /* root 0 */
    int64_t self, total;
    int64_t base_self, base_total;
} hs_walk_node;

/* Called for each node n entered, with its children (sorted). A non-zero
 * return stops the walk, and hs_calltree_walk returns it. */
typedef int (*hs_walk_fn)(void *ctx, const hs_walk_node *n, const hs_walk_node *kids,
                          size_t n_kids);

/* Is n entered by a walk with this min_keep? (|total| or |base_total| at
 * least min_keep; every node when min_keep is 0) */
static inline bool hs_walk_keep(const hs_walk_node *n, int64_t min_keep)
{
    int64_t t = n->total < 0 ? (n->total == INT64_MIN ? INT64_MAX : -n->total) : n->total;
    int64_t b = n->base_total < 0 ? (n->base_total == INT64_MIN ? INT64_MAX : -n->base_total)
                                  : n->base_total;
    return t >= min_keep || b >= min_keep;
}

/* Walk v's call tree from the root: fn sees every entered node; children
 * not kept (hs_walk_keep) are passed to their parent's fn but not entered.
 * 0, fn's non-zero return, or -1 with a message on out of memory. */
int hs_calltree_walk(const hs_view *v, int64_t min_keep, hs_walk_fn fn, void *ctx, char *err,
                     size_t errlen);

/* hs_calltree_walk on up to threads threads (at most 2), fn called with
 * contexts of its own for pieces of the walk: fork(ctx) returns a new
 * context for the piece that starts where ctx's walk is (a copy of what fn
 * keeps of the nodes above, with an output of its own; NULL: out of
 * memory), join(ctx, piece) appends a piece's output to ctx's (on the
 * calling thread, in walk order; non-zero stops the walk and is returned)
 * and drop frees a piece. With fewer than HS_WALK_SPLIT_MIN stacks, or one
 * thread, fn sees ctx itself as with hs_calltree_walk. */
typedef struct {
    hs_walk_fn fn;
    void *(*fork)(void *ctx);
    int (*join)(void *ctx, void *piece);
    void (*drop)(void *piece);
} hs_walk_split;
#define HS_WALK_SPLIT_MIN 4096
/* a piece walks about 1 / HS_WALK_SPLIT_PIECES of the stacks */
#define HS_WALK_SPLIT_PIECES 128
int hs_calltree_walk_split(const hs_view *v, int64_t min_keep, const hs_walk_split *sp, void *ctx,
                           int threads, char *err, size_t errlen);

/* Every node of the same tree, unordered and faster than a walk: fn(ctx,
 * n, count) stands for count nodes with n's total and base_total (a chain
 * of single children at depths n->depth, n->depth + 1, ...; n's node and
 * self are the first's). 0, or -1 with a message on out of memory. */
typedef void (*hs_tally_fn)(void *ctx, const hs_walk_node *n, size_t count);
int hs_calltree_tally(const hs_view *v, hs_tally_fn fn, void *ctx, char *err, size_t errlen);

/* The view node ids the call tree uses, in the order they first appear
 * in it (tree node creation order): *order is malloc'd (free it), *n its
 * length. 0, or -1 with a message on out of memory. */
int hs_calltree_first_use(const hs_view *v, uint32_t **order, size_t *n, char *err,
                          size_t errlen);

/* ------------------------------------------------------------------ */
/* call graph (top, peek, graph, tree, diff)                           */
/* ------------------------------------------------------------------ */

typedef struct {
    uint32_t src, dst;    /* caller -> callee, node ids */
    int64_t weight;       /* NEW */
    int64_t base_weight;  /* BASE */
    bool inline_call;     /* dst was inlined into src */
    bool residual;        /* goes over nodes that were trimmed away */
} hs_graph_edge;

typedef struct {
    int64_t flat, cum;           /* NEW */
    int64_t base_flat, base_cum; /* BASE */
    int64_t flat_div, cum_div;   /* --mean: the counts summed with flat and cum */
    uint32_t *in, *out;          /* edge indices (callers, callees), by weight desc */
    size_t n_in, n_out;
} hs_graph_node;

/* The value a report prints for a node (pprof's FlatValue/CumValue): NEW -
 * BASE, divided by the count under --mean. Trimming and sorting use the
 * undivided values, as pprof does. */
static inline int64_t hs_graph_flat(const hs_graph_node *n)
{
    int64_t f = n->flat - n->base_flat;
    return n->flat_div ? f / n->flat_div : f;
}
static inline int64_t hs_graph_cum(const hs_graph_node *n)
{
    int64_t c = n->cum - n->base_cum;
    return n->cum_div ? c / n->cum_div : c;
}

typedef struct {
    hs_graph_node *nodes; /* indexed by node id; n_nodes == view->n_nodes */
    size_t n_nodes;
    hs_graph_edge *edges; /* kept edges */
    size_t n_edges;
    uint32_t *order;      /* kept nodes in report order (flat, or cum with --cum;
                             by |delta| in a diff) */
    size_t n_order;
    /* for the report header, as pprof prints it */
    int64_t nodes_total;  /* sum of flat (NEW) over all nodes, before trimming */
    int64_t node_cutoff, edge_cutoff;
    size_t orig_count;    /* nodes after the nodefraction cut */
    size_t dropped_nodes; /* nodes dropped by nodefraction */
    size_t dropped_edges; /* edges dropped by edgefraction */
} hs_graph;

/* Build the trimmed call graph of v as pprof's newTrimmedGraph does, using
 * o's nodecount/nodefraction/edgefraction/cum_sort (call
 * hs_analysis_apply_defaults first). 0 on success. */
int hs_graph_build(const hs_view *v, const hs_analysis_options *o, hs_graph *out, char *err,
                   size_t errlen);
void hs_graph_free(hs_graph *g);

/* ------------------------------------------------------------------ */
/* small helpers                                                       */
/* ------------------------------------------------------------------ */

/* Clean a file path in place, lexically, as Go's filepath.Clean (and so
 * pprof) does: repeated slashes to one, "." elements dropped, "x/.."
 * pairs removed, ".." at the root dropped, "" -> ".". */
void hs_analysis_clean_path(char *path);

/* Compile a filter's regex (RE2 syntax, as pprof's; unanchored; bounded
 * memory and linear-time matching, see regex.h) with WHAT, the filter's
 * name, in the error message. 0 on success. */
int hs_analysis_regcomp(hs_regex *out, const char *re, const char *what, char *err,
                        size_t errlen);

#endif
