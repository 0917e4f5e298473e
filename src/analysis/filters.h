/* filters.h — the rules that decide what a report shows of a stack, for
 * any source of stacks: a profile (view.c) or the store's stack records
 * (server/query_view.c). The options' compiled form (regexes once, tag
 * filters as key + regexes or a numeric range with units) and, on top of
 * it, pprof's FilterSamplesByName, ShowFrom, PruneFrom, noinlines and
 * FilterSamplesByTag as functions of what a source can give: the match
 * bits of a location's lines and mapping, the decisions of a sample's
 * locations, its labels. A source works out the inputs its own way (once
 * per function, or once per distinct string) and asks these; no rule is
 * written twice. */
#ifndef HS_ANALYSIS_FILTERS_H
#define HS_ANALYSIS_FILTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/regex.h"

/* ---- compiled filters ---- */
typedef struct {
    bool numeric;
    char *key;      /* NULL: any key */
    hs_regex *res;  /* regex form: comma-separated alternatives */
    size_t n_res;
    /* numeric form */
    int kind;       /* 0 exact, 1 >= lo, 2 <= hi, 3 lo..hi */
    double lo, hi;
    int unit_class; /* 0 none, 1 bytes, 2 seconds */
} hs_an_tagfilter;

typedef struct {
    hs_regex focus, ignore, show, hide, show_from, prune_from;
    bool has_focus, has_ignore, has_show, has_hide, has_show_from, has_prune_from;
    bool noinlines;
    hs_an_tagfilter tagfocus, tagignore;
    bool has_tagfocus, has_tagignore;
} hs_an_filters;

int hs_an_filters_compile(hs_an_filters *f, const hs_analysis_options *o, char *err, size_t errlen);
void hs_an_filters_free(hs_an_filters *f);

/* Whether a filter by name (focus, ignore, hide, show, show_from,
 * prune_from) is set: without one, a sample keeps all its locations and
 * only the tag filters can drop it (noinlines drops lines, not locations). */
bool hs_an_filters_by_name(const hs_an_filters *f);

/* ---- match bits of strings ---- */
/* Which of f's name filters match s (unanchored, as everywhere). */
enum {
    HS_FM_FOCUS = 1,
    HS_FM_IGNORE = 2,
    HS_FM_HIDE = 4,
    HS_FM_SHOW = 8,
    HS_FM_SHOWFROM = 16,
    HS_FM_PRUNE = 32, /* prune_from matches the function's name (pprof's simplified form) */
    HS_FM_NOFN = 64,  /* a line without a function: hs_an_location_rule's input only */
};
uint8_t hs_an_filter_bits(const hs_an_filters *f, const char *s);

/* hs_an_filter_bits of a function's name, with HS_FM_PRUNE when
 * prune_from matches it (only a name can prune). */
uint8_t hs_an_name_bits(const hs_an_filters *f, const char *name);

/* The bits of a function: those of its name or its file, and HS_FM_PRUNE
 * from its name alone. */
uint8_t hs_an_function_bits(const hs_an_filters *f, const char *name, const char *file);

/* ---- one location ---- */
/* Decisions about a location (HS_LOC_FOCUSED and HS_LOC_IGNORED exclusive). */
enum {
    HS_LOC_FOCUSED = 1,   /* matches focus (or there is none) and not ignore */
    HS_LOC_IGNORED = 2,   /* matches ignore */
    HS_LOC_HIDDEN = 4,    /* no line left to show: the sample goes on without it */
    HS_LOC_SHOWFROM = 8,  /* show_from matched here */
    HS_LOC_PRUNE = 16,    /* prune_from matched here: frames leafward of it go */
    HS_LOC_HIDEMATCH = 32, /* hide matched something here (for the "matched nothing" notes) */
    HS_LOC_SHOWMATCH = 64, /* show left a line here (idem) */
};

/* The name filters on a location of n lines, innermost first: mb is its
 * mapping's hs_an_filter_bits, lb[k] line k's function's
 * hs_an_function_bits (HS_FM_NOFN for a line without a function). keep[k]
 * (room for n) is set to whether line k is shown. Returns the HS_LOC_*
 * bits. */
uint8_t hs_an_location_rule(const hs_an_filters *f, uint8_t mb, const uint8_t *lb, size_t n, uint8_t *keep);

/* ---- one sample ---- */
/* The name filters on a sample whose locations, leaf first, have the
 * decisions dec[0..n): false when it is dropped; else pos[0..*kept) are
 * the positions (into dec) of the locations it keeps, leaf first. pos has
 * room for n. The tag filters are the caller's (hs_an_tags_keep). */
/* (inline: it runs once per sample) */
static inline bool hs_an_sample_rule(const hs_an_filters *f, const uint8_t *dec, size_t n, uint32_t *pos, size_t *kept)
{
    bool name_filter = f->has_focus || f->has_ignore || f->has_hide || f->has_show;
    bool focused = false, ignored = false;
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        focused |= (dec[k] & HS_LOC_FOCUSED) != 0;
        ignored |= (dec[k] & HS_LOC_IGNORED) != 0;
        if (!(dec[k] & HS_LOC_HIDDEN))
            pos[m++] = (uint32_t)k;
    }
    if (name_filter && (!focused || ignored || m == 0))
        return false;
    if (f->has_show_from) {
        size_t k = m;
        while (k > 0 && !(dec[pos[k - 1]] & HS_LOC_SHOWFROM))
            k--;
        if (k == 0)
            return false;
        m = k;
    }
    if (f->has_prune_from) { /* drop the frames leafward of the first pruning location */
        for (size_t k = 0; k < m; k++)
            if (dec[pos[k]] & HS_LOC_PRUNE) {
                memmove(pos, pos + k, (m - k) * sizeof *pos);
                m -= k;
                break;
            }
    }
    *kept = m;
    return true;
}

/* A label of a sample as tag filters read it: str NULL for a numeric one
 * (num in unit; "" unit: pprof infers it from the key). */
typedef struct {
    const char *key, *str, *unit;
    int64_t num;
} hs_an_label;

/* The sample's label i into *out; labels are counted by the caller. */
typedef void (*hs_an_label_fn)(const void *sample, size_t i, hs_an_label *out);

/* Does a sample with n labels pass a tag filter? */
bool hs_an_tagfilter_match_labels(const hs_an_tagfilter *tf, const void *sample, size_t n, hs_an_label_fn get);

/* tagfocus and tagignore on a sample: false when it is dropped. */
static inline bool hs_an_tags_keep(const hs_an_filters *f, const void *sample, size_t n, hs_an_label_fn get)
{
    if (f->has_tagfocus && !hs_an_tagfilter_match_labels(&f->tagfocus, sample, n, get))
        return false;
    return !(f->has_tagignore && hs_an_tagfilter_match_labels(&f->tagignore, sample, n, get));
}

/* ---- nodes ---- */
/* The file name of a node: trimmed (unless untrimmed) as --trim-path and
 * --source-path say, then cleaned; malloc'd ("" stays ""), NULL on out of
 * memory. */
char *hs_an_node_file(const char *file, bool untrimmed, const char *trim, const char *source_path);

/* What identifies a node (strtab ids of a table the caller keeps). */
typedef struct {
    uint32_t function, file, objfile;
    int64_t line, start_line;
    uint64_t address;
} hs_an_node_key;

/* The key of a line's node at granularity g (pprof's CreateNodes): name is
 * the function's name id ("" at files granularity: the caller passes
 * empty), named whether that name is not "", file its node file id
 * (hs_an_node_file; empty at functions granularity), obj the location's
 * mapping file id (empty for none); a line without a function is keyed by
 * its mapping alone. obj_names: --obj-names, every node keeps its object. */
void hs_an_node_key_of(hs_an_node_key *k, hs_granularity g, bool obj_names, uint32_t empty, bool has_fn,
                       uint32_t name, bool named, uint32_t file, uint32_t obj, int64_t line, int64_t start_line,
                       uint64_t address);

/* pprof's NodeInfo.PrintableName of a node (address 0: none) at s,
 * NUL-terminated; s has room for HS_AN_PRINTABLE_ROOM(strlen(fn),
 * strlen(file), strlen(obj)) chars. Returns its length. */
#define HS_AN_PRINTABLE_ROOM(fl, filel, objl) ((fl) + (filel) + (objl) + 64)
size_t hs_an_printable_name_at(char *s, const char *fn, size_t fl, const char *file, size_t filel, const char *obj,
                               int64_t line, uint64_t addr);

/* The same, malloc'd; NULL on out of memory. */
char *hs_an_printable_name(const char *fn, const char *file, const char *obj, int64_t line, uint64_t addr);

#endif
