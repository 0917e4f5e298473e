/* analysis_internal.h — helpers private to src/analysis: a growable buffer,
 * a multimap from 64-bit hashes to uint32 candidates (profile/hashmap.h), string
 * interning, and the compiled form of the filter options. */
#ifndef HS_ANALYSIS_INTERNAL_H
#define HS_ANALYSIS_INTERNAL_H

#include "analysis/regex.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "profile/hashmap.h"

/* ---- error helper ---- */
void hs_an_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- hashing ---- */
static inline uint64_t hs_an_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* Map from a 64-bit hash to a list of uint32 candidates (collisions are
 * resolved by the caller comparing the candidate): the shared container
 * (profile/hashmap.h) used as a multimap. */
typedef hs_hmap hs_an_map;

static inline int hs_an_map_init(hs_an_map *m, size_t hint) { return hs_hmap_init(m, hint); }
static inline void hs_an_map_free(hs_an_map *m) { hs_hmap_free(m); }
/* Iterate candidates: start with *slot = (size_t)-1; returns the next value
 * stored under key, or UINT32_MAX when there is none. */
static inline uint32_t hs_an_map_next(const hs_an_map *m, uint64_t key, size_t *slot)
{
    uint64_t v;
    return hs_hmap_next(m, key, slot, &v) ? (uint32_t)v : UINT32_MAX;
}
static inline int hs_an_map_put(hs_an_map *m, uint64_t key, uint32_t val)
{
    return hs_hmap_add(m, key, val);
}

/* ---- string intern table (id -> string, stable pointers) ---- */
typedef struct {
    char **strs;
    size_t n, cap;
    hs_an_map map;
    char *chunks;      /* the strings, packed in malloc'd chunks (a list) */
    char *free_at;     /* the next string's place in the newest chunk */
    size_t free_left;
} hs_an_strtab;

int hs_an_strtab_init(hs_an_strtab *t);
void hs_an_strtab_free(hs_an_strtab *t);
/* id of s, interned if new; UINT32_MAX on out of memory */
uint32_t hs_an_strtab_intern(hs_an_strtab *t, const char *s);
/* No more lookups: the table's map is freed, its strings stay (a later
 * intern still works but no longer finds the strings interned before). */
void hs_an_strtab_seal(hs_an_strtab *t);
/* A copy of s kept as long as the table, not interned (no id, never found
 * by hs_an_strtab_intern): for strings that are mostly distinct. NULL on out
 * of memory. */
const char *hs_an_strtab_keep(hs_an_strtab *t, const char *s);

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
