/* analysis_internal.h — what is private to src/analysis: the compiled form
 * of the filter options, the view's internals shared by its files, pprof's
 * naming helpers. (The map, string table and error helper it uses are
 * src/base's.) */
#ifndef HS_ANALYSIS_INTERNAL_H
#define HS_ANALYSIS_INTERNAL_H

#include "analysis/regex.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "base/err.h"
#include "base/hashmap.h"
#include "base/strtab.h"

/* ---- the view build ---- */
/* Profiles of at least this many samples (default 4096) have their
 * locations worked out on a second thread while their samples are merged,
 * and their stacks' nodes filled on two threads from 16 times as many
 * frames (view.c); tests set it to 0 or SIZE_MAX to take either path. */
extern size_t hs_an_view_apart_min;

/* ---- compiled filters ---- */
typedef struct {
    bool numeric;
    char *key;            /* NULL: any key */
    hs_regex *res;         /* regex form: comma-separated alternatives */
    size_t n_res;
    /* numeric form */
    int kind;             /* 0 exact, 1 >= lo, 2 <= hi, 3 lo..hi */
    double lo, hi;
    int unit_class;       /* 0 none, 1 bytes, 2 seconds */
} hs_an_tagfilter;

typedef struct {
    hs_regex focus, ignore, show, hide, show_from, prune_from;
    bool has_focus, has_ignore, has_show, has_hide, has_show_from, has_prune_from;
    bool noinlines;
    hs_an_tagfilter tagfocus, tagignore;
    bool has_tagfocus, has_tagignore;
} hs_an_filters;

/* Which of f's name filters match s (unanchored, as everywhere). */
enum { HS_FM_FOCUS = 1, HS_FM_IGNORE = 2, HS_FM_HIDE = 4, HS_FM_SHOW = 8, HS_FM_SHOWFROM = 16 };
uint8_t hs_an_filter_bits(const hs_an_filters *f, const char *s);

int hs_an_filters_compile(hs_an_filters *f, const hs_analysis_options *o, char *err, size_t errlen);
void hs_an_filters_free(hs_an_filters *f);

/* Does sample s of p pass a tag filter? */
bool hs_an_tagfilter_match(const hs_an_tagfilter *tf, const hs_profile *p, const hs_sample *s);

/* The view's stacks with identical node sequences (and inline flags)
 * summed; stacks of value 0 and base 0 left out. Computed once, owned by the
 * view. 0, or -1 on out of memory. */
int hs_an_view_unique(const hs_view *v, const hs_stack **out, size_t *n);

/* pprof's NodeInfo.PrintableName of a node (address 0: none), malloc'd;
 * NULL on out of memory. */
char *hs_an_printable_name(const char *fn, const char *file, const char *obj, int64_t line, uint64_t addr);

/* pprof's simplifyFunc (profile/prune.go), for prune regexes: a leading '.'
 * dropped, the name cut at the first '(' not part of "(anonymous
 * namespace)" or "operator()". Returns buf. */
const char *hs_an_simplify_func(const char *name, char *buf, size_t len);

#endif
