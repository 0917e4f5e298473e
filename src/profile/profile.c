/* profile.c — the in-memory profile model (see profile.h).
 *
 * Storage: the top-level arrays (samples, locations, ...) are growable
 * vectors; everything hanging off them (a sample's location ids, values and
 * labels, a location's lines, the strings) lives in one bump arena, so a
 * million samples cost a handful of large allocations, not millions of
 * small ones. Lookups by id go through open-addressing hash maps, with a
 * fast path when ids are dense (1..n in order, as we and Go write them).
 * Strings and functions are interned through lazily built hash tables. */
#include "profile/profile_internal.h"
#include "base/vec.h"
#include "base/hashmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ---- */

struct hs_arena_chunk {
    hs_arena_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

#define HS_ARENA_MIN_CHUNK ((size_t)64 << 10)
#define HS_ARENA_MAX_CHUNK ((size_t)16 << 20)

static hs_arena_chunk *hs_arena_new_chunk(hs_arena *a, size_t size)
{
    size_t want = a->total < HS_ARENA_MIN_CHUNK ? HS_ARENA_MIN_CHUNK : a->total;
    if (want > HS_ARENA_MAX_CHUNK)
        want = HS_ARENA_MAX_CHUNK;
    if (want < size)
        want = size;
    if (a->limit && a->total + want > a->limit) {
        if (a->total + size > a->limit)
            return NULL;
        want = size;
    }
    hs_arena_chunk *c = malloc(sizeof *c + want);
    if (!c)
        return NULL;
    c->size = want;
    c->used = 0;
    c->next = a->head;
    a->head = c;
    a->total += want;
    return c;
}

void *hs_arena_alloc(hs_arena *a, size_t size)
{
    if (size > SIZE_MAX / 2)
        return NULL;
    size = (size + 15) & ~(size_t)15;
    if (size == 0)
        size = 16;
    hs_arena_chunk *c = a->head;
    if (!c || c->size - c->used < size) {
        c = hs_arena_new_chunk(a, size);
        if (!c)
            return NULL;
    }
    void *r = c->data + c->used;
    c->used += size;
    return r;
}

void *hs_arena_memdup(hs_arena *a, const void *src, size_t size)
{
    void *d = hs_arena_alloc(a, size);
    if (d && size)
        memcpy(d, src, size);
    return d;
}

char *hs_arena_strdup(hs_arena *a, const char *s)
{
    return hs_arena_memdup(a, s, strlen(s) + 1);
}

void hs_arena_free(hs_arena *a)
{
    hs_arena_chunk *c = a->head;
    while (c) {
        hs_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

void hs_arena_adopt(hs_arena *a, hs_arena *from)
{
    hs_arena_chunk *tail = from->head;
    if (!tail)
        return;
    while (tail->next)
        tail = tail->next;
    if (a->head) { /* after a's head: it stays the chunk allocations bump in */
        tail->next = a->head->next;
        a->head->next = from->head;
    } else {
        a->head = from->head;
    }
    a->total += from->total;
    from->head = NULL;
    from->total = 0;
}

/* ---- hashing ---- */

static uint64_t hs_hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return hs_hmap_mix(h);
}

static size_t hs_pow2_at_least(size_t n)
{
    size_t c = 16;
    while (c < n)
        c <<= 1;
    return c;
}

/* ---- id -> index maps ---- */

typedef struct {
    hs_hmap map; /* id -> element index */
    bool dense;  /* element i has id i+1: no table needed */
} hs_id_index;

static void hs_id_index_free(hs_id_index *m)
{
    hs_hmap_free(&m->map);
    m->dense = true;
}

/* -1 on a duplicate id or out of memory */
static int hs_id_index_put(hs_id_index *m, uint64_t id, size_t index)
{
    bool inserted;
    uint64_t *v = hs_hmap_slot(&m->map, id, &inserted);
    if (!v || !inserted)
        return -1;
    *v = index;
    return 0;
}

/* Ids are the first member of hs_mapping, hs_location and hs_function. */
static uint64_t hs_id_at(const void *base, size_t stride, size_t i)
{
    uint64_t id;
    memcpy(&id, (const char *)base + i * stride, sizeof id);
    return id;
}

/* Rebuild from an array; -1 on a zero or duplicate id or out of memory. */
static int hs_id_index_build(hs_id_index *m, const void *base, size_t stride, size_t n)
{
    hs_id_index_free(m);
    for (size_t i = 0; i < n && m->dense; i++)
        if (hs_id_at(base, stride, i) != i + 1)
            m->dense = false;
    if (m->dense)
        return 0;
    if (n > UINT32_MAX - 1 || hs_hmap_reserve(&m->map, n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t id = hs_id_at(base, stride, i);
        if (id == 0 || hs_id_index_put(m, id, i) != 0)
            return -1;
    }
    return 0;
}

/* Record that element n-1 (just appended) has `id`. */
static int hs_id_index_append(hs_id_index *m, const void *base, size_t stride, size_t n, uint64_t id)
{
    if (m->dense && id == n)
        return 0;
    if (m->dense) {
        m->dense = false;
        if (hs_hmap_reserve(&m->map, n) != 0)
            return -1;
        for (size_t i = 0; i + 1 < n; i++)
            (void)hs_id_index_put(m, hs_id_at(base, stride, i), i);
    }
    return hs_id_index_put(m, id, n - 1);
}

static long hs_id_index_get(const hs_id_index *m, const void *base, size_t stride, size_t n, uint64_t id)
{
    if (m->dense)
        return (id >= 1 && id <= n) ? (long)(id - 1) : -1;
    (void)base;
    (void)stride;
    uint64_t i;
    return hs_hmap_get(&m->map, id, &i) ? (long)i : -1;
}

/* ---- the private index ---- */

typedef struct {
    uint32_t *slots; /* element index + 1; 0 = empty */
    size_t cap, n_indexed;
} hs_intern;

struct hs_profile_index {
    hs_arena arena;
    size_t cap_samples, cap_locations, cap_functions, cap_mappings, cap_strings;
    size_t cap_sample_types, cap_comments;
    hs_id_index locs, funcs, maps;
    uint64_t max_loc_id, max_func_id, max_map_id;
    hs_intern strs, fdedup;
    uint32_t *stack_of; /* per decoded sample: its stack class (hs_profile_sample_stack) */
    size_t n_stack_of, n_stacks;
};

hs_arena *hs_profile_arena(hs_profile *p) { return &p->ix->arena; }

void hs_profile_set_stack_classes(hs_profile *p, uint32_t *stack_of, size_t n, size_t n_classes)
{
    free(p->ix->stack_of);
    p->ix->stack_of = stack_of;
    p->ix->n_stack_of = n;
    p->ix->n_stacks = n_classes;
}

uint32_t hs_profile_sample_stack(const hs_profile *p, size_t i, size_t *n_classes)
{
    if (n_classes)
        *n_classes = p->ix->n_stacks;
    return i < p->ix->n_stack_of ? p->ix->stack_of[i] : UINT32_MAX;
}

static void hs_intern_free(hs_intern *t)
{
    free(t->slots);
    memset(t, 0, sizeof *t);
}


#define HS_RESERVE(p, field, capname, need) \
    hs_vec_reserve((void **)&(p)->field, &(p)->ix->capname, (need), sizeof *(p)->field)

int hs_profile_reserve_samples(hs_profile *p, size_t need)
{
    return HS_RESERVE(p, samples, cap_samples, need);
}

int hs_profile_reserve_tables(hs_profile *p, size_t n_str, size_t n_map, size_t n_func, size_t n_loc)
{
    if (HS_RESERVE(p, strings, cap_strings, n_str) != 0 || HS_RESERVE(p, mappings, cap_mappings, n_map) != 0 ||
        HS_RESERVE(p, functions, cap_functions, n_func) != 0 || HS_RESERVE(p, locations, cap_locations, n_loc) != 0)
        return -1;
    return 0;
}

hs_profile *hs_profile_new(void)
{
    hs_profile *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ix = calloc(1, sizeof *p->ix);
    if (!p->ix) {
        free(p);
        return NULL;
    }
    p->ix->locs.dense = p->ix->funcs.dense = p->ix->maps.dense = true;
    char *empty = hs_arena_strdup(&p->ix->arena, "");
    if (!empty || hs_profile_push_string_raw(p, empty) != 0) {
        hs_profile_free(p);
        return NULL;
    }
    return p;
}

void hs_profile_free(hs_profile *p)
{
    if (!p)
        return;
    free(p->sample_types);
    free(p->samples);
    free(p->mappings);
    free(p->locations);
    free(p->functions);
    free(p->strings);
    free(p->comments);
    if (p->ix) {
        hs_arena_free(&p->ix->arena);
        hs_id_index_free(&p->ix->locs);
        hs_id_index_free(&p->ix->funcs);
        hs_id_index_free(&p->ix->maps);
        hs_intern_free(&p->ix->strs);
        hs_intern_free(&p->ix->fdedup);
        free(p->ix->stack_of);
        free(p->ix);
    }
    free(p);
}

/* ---- strings ---- */

static size_t hs_intern_find_str(const hs_profile *p, const char *s, uint64_t h, size_t *slot)
{
    const hs_intern *t = &p->ix->strs;
    size_t mask = t->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t v = t->slots[i];
        if (!v || strcmp(p->strings[v - 1], s) == 0) {
            *slot = i;
            return v;
        }
    }
}

/* Room in t for n + 1 entries at half load: when it has less, a larger
 * empty slot array, every entry then to be indexed again. */
static inline int hs_intern_room(hs_intern *t, size_t n)
{
    if ((n + 1) * 2 <= t->cap)
        return 0;
    size_t cap = hs_pow2_at_least((n + 1) * 2);
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    t->n_indexed = 0;
    return 0;
}

/* Make sure every string is in the intern table and there is room for one more. */
static int hs_intern_strings_catch_up(hs_profile *p)
{
    hs_intern *t = &p->ix->strs;
    if (hs_intern_room(t, p->n_strings) != 0)
        return -1;
    for (; t->n_indexed < p->n_strings; t->n_indexed++) {
        size_t slot;
        const char *s = p->strings[t->n_indexed];
        if (!hs_intern_find_str(p, s, hs_hash_str(s), &slot))
            t->slots[slot] = (uint32_t)(t->n_indexed + 1);
    }
    return 0;
}

int hs_profile_push_string_raw(hs_profile *p, char *s)
{
    if (HS_RESERVE(p, strings, cap_strings, p->n_strings + 1) != 0)
        return -1;
    p->strings[p->n_strings++] = s;
    return 0;
}

int64_t hs_profile_str(hs_profile *p, const char *s)
{
    if (!s || !*s)
        return 0;
    if (p->n_strings >= UINT32_MAX - 1 || hs_intern_strings_catch_up(p) != 0)
        return -1;
    size_t slot;
    uint64_t h = hs_hash_str(s);
    size_t found = hs_intern_find_str(p, s, h, &slot);
    if (found)
        return (int64_t)found - 1;
    char *copy = hs_arena_strdup(&p->ix->arena, s);
    if (!copy || hs_profile_push_string_raw(p, copy) != 0)
        return -1;
    p->ix->strs.slots[slot] = (uint32_t)p->n_strings;
    p->ix->strs.n_indexed = p->n_strings;
    return (int64_t)p->n_strings - 1;
}

const char *hs_profile_string(const hs_profile *p, int64_t idx)
{
    if (idx < 0 || (uint64_t)idx >= p->n_strings)
        return "";
    return p->strings[idx];
}

/* ---- sample types, period, comments ---- */

int hs_profile_push_sample_type_raw(hs_profile *p, int64_t type, int64_t unit)
{
    if (HS_RESERVE(p, sample_types, cap_sample_types, p->n_sample_types + 1) != 0)
        return -1;
    p->sample_types[p->n_sample_types++] = (hs_value_type){type, unit};
    return (int)p->n_sample_types - 1;
}

int hs_profile_add_sample_type(hs_profile *p, const char *type, const char *unit)
{
    if (p->n_samples > 0)
        return -1;
    int64_t t = hs_profile_str(p, type), u = hs_profile_str(p, unit);
    if (t < 0 || u < 0)
        return -1;
    return hs_profile_push_sample_type_raw(p, t, u);
}

void hs_profile_set_period(hs_profile *p, const char *type, const char *unit, int64_t period)
{
    int64_t t = hs_profile_str(p, type), u = hs_profile_str(p, unit);
    p->period_type.type = t < 0 ? 0 : t;
    p->period_type.unit = u < 0 ? 0 : u;
    p->period = period;
}

int hs_profile_push_comment_raw(hs_profile *p, int64_t comment)
{
    if (HS_RESERVE(p, comments, cap_comments, p->n_comments + 1) != 0)
        return -1;
    p->comments[p->n_comments++] = comment;
    return 0;
}

void hs_profile_add_comment(hs_profile *p, const char *comment)
{
    int64_t c = hs_profile_str(p, comment);
    if (c >= 0)
        (void)hs_profile_push_comment_raw(p, c);
}

/* ---- mappings, functions, locations ---- */

#define HS_APPEND_ID(p, map, arr, n, id) \
    hs_id_index_append(&(p)->ix->map, (p)->arr, sizeof *(p)->arr, (p)->n, (id))

/* Appends the table row e (size bytes, its id id) to *arr of *n rows and
 * raises *max_id to id: the one body of the three push_*_raw below. */
static inline int push_row(void **arr, size_t *n, size_t *cap, size_t size, const void *e, uint64_t id,
                           uint64_t *max_id)
{
    if (hs_vec_reserve(arr, cap, *n + 1, size) != 0)
        return -1;
    memcpy((char *)*arr + *n * size, e, size);
    ++*n;
    if (id > *max_id)
        *max_id = id;
    return 0;
}

int hs_profile_push_mapping_raw(hs_profile *p, const hs_mapping *m)
{
    return push_row((void **)&p->mappings, &p->n_mappings, &p->ix->cap_mappings, sizeof *m, m, m->id,
                    &p->ix->max_map_id);
}

int hs_profile_push_function_raw(hs_profile *p, const hs_function *f)
{
    return push_row((void **)&p->functions, &p->n_functions, &p->ix->cap_functions, sizeof *f, f, f->id,
                    &p->ix->max_func_id);
}

int hs_profile_push_location_raw(hs_profile *p, const hs_location *l)
{
    return push_row((void **)&p->locations, &p->n_locations, &p->ix->cap_locations, sizeof *l, l, l->id,
                    &p->ix->max_loc_id);
}

uint64_t hs_profile_add_mapping(hs_profile *p, uint64_t start, uint64_t limit, uint64_t offset,
                                const char *filename, const char *build_id)
{
    int64_t fn = hs_profile_str(p, filename), bid = hs_profile_str(p, build_id);
    if (fn < 0 || bid < 0 || p->ix->max_map_id == UINT64_MAX)
        return 0;
    hs_mapping m = {.id = p->ix->max_map_id + 1, .memory_start = start, .memory_limit = limit,
                    .file_offset = offset, .filename = fn, .build_id = bid};
    if (hs_profile_push_mapping_raw(p, &m) != 0)
        return 0;
    if (HS_APPEND_ID(p, maps, mappings, n_mappings, m.id) != 0) {
        p->n_mappings--;
        return 0;
    }
    return m.id;
}

static uint64_t hs_hash_function(const hs_function *f)
{
    return hs_hmap_mix((uint64_t)f->name * 31 + hs_hmap_mix((uint64_t)f->system_name) * 7 +
                    hs_hmap_mix((uint64_t)f->filename) + (uint64_t)f->start_line * 0x9e3779b97f4a7c15ULL);
}

static bool hs_function_same(const hs_function *a, const hs_function *b)
{
    return a->name == b->name && a->system_name == b->system_name &&
           a->filename == b->filename && a->start_line == b->start_line;
}

/* Index of a function equal to f, or room for it; table kept in sync lazily. */
static int hs_fdedup_catch_up(hs_profile *p)
{
    hs_intern *t = &p->ix->fdedup;
    if (hs_intern_room(t, p->n_functions) != 0)
        return -1;
    size_t mask = t->cap - 1;
    for (; t->n_indexed < p->n_functions; t->n_indexed++) {
        const hs_function *f = &p->functions[t->n_indexed];
        for (size_t i = hs_hash_function(f) & mask;; i = (i + 1) & mask) {
            uint32_t v = t->slots[i];
            if (!v) {
                t->slots[i] = (uint32_t)(t->n_indexed + 1);
                break;
            }
            if (hs_function_same(&p->functions[v - 1], f))
                break;
        }
    }
    return 0;
}

uint64_t hs_profile_add_function(hs_profile *p, const char *name, const char *system_name,
                                 const char *filename, int64_t start_line)
{
    hs_function f = {.name = hs_profile_str(p, name),
                     .system_name = hs_profile_str(p, system_name),
                     .filename = hs_profile_str(p, filename),
                     .start_line = start_line};
    if (f.name < 0 || f.system_name < 0 || f.filename < 0)
        return 0;
    if (p->n_functions >= UINT32_MAX - 1 || hs_fdedup_catch_up(p) != 0)
        return 0;
    hs_intern *t = &p->ix->fdedup;
    size_t mask = t->cap - 1, i = hs_hash_function(&f) & mask;
    for (; t->slots[i]; i = (i + 1) & mask)
        if (hs_function_same(&p->functions[t->slots[i] - 1], &f))
            return p->functions[t->slots[i] - 1].id;
    if (p->ix->max_func_id == UINT64_MAX)
        return 0;
    f.id = p->ix->max_func_id + 1;
    if (hs_profile_push_function_raw(p, &f) != 0)
        return 0;
    if (HS_APPEND_ID(p, funcs, functions, n_functions, f.id) != 0) {
        p->n_functions--;
        return 0;
    }
    t->slots[i] = (uint32_t)p->n_functions;
    t->n_indexed = p->n_functions;
    return f.id;
}

uint64_t hs_profile_add_location(hs_profile *p, uint64_t mapping_id, uint64_t address,
                                 const hs_line *lines, size_t n_lines)
{
    if (p->ix->max_loc_id == UINT64_MAX || n_lines > SIZE_MAX / sizeof *lines)
        return 0;
    hs_location l = {.id = p->ix->max_loc_id + 1, .mapping_id = mapping_id, .address = address,
                     .n_lines = n_lines};
    if (n_lines) {
        l.lines = hs_arena_memdup(&p->ix->arena, lines, n_lines * sizeof *lines);
        if (!l.lines)
            return 0;
    }
    if (hs_profile_push_location_raw(p, &l) != 0)
        return 0;
    if (HS_APPEND_ID(p, locs, locations, n_locations, l.id) != 0) {
        p->n_locations--;
        return 0;
    }
    return l.id;
}

int hs_profile_set_location_lines(hs_profile *p, uint64_t location_id, const hs_line *lines,
                                  size_t n_lines)
{
    hs_location *l = (hs_location *)hs_profile_location(p, location_id);
    if (!l || n_lines > SIZE_MAX / sizeof *lines)
        return -1;
    hs_line *copy = NULL;
    if (n_lines) {
        copy = hs_arena_memdup(&p->ix->arena, lines, n_lines * sizeof *lines);
        if (!copy)
            return -1;
    }
    l->lines = copy;
    l->n_lines = n_lines;
    return 0;
}

/* ---- samples ---- */

int hs_profile_add_sample(hs_profile *p, const uint64_t *location_ids, size_t n_locations,
                          const int64_t *values, const hs_label *labels, size_t n_labels)
{
    if (n_locations > SIZE_MAX / 8 || n_labels > SIZE_MAX / sizeof *labels)
        return -1;
    if (hs_profile_reserve_samples(p, p->n_samples + 1) != 0)
        return -1;
    hs_arena *a = &p->ix->arena;
    hs_sample s = {.n_locations = n_locations, .n_labels = n_labels};
    s.location_ids = hs_arena_memdup(a, location_ids, n_locations * sizeof *location_ids);
    s.values = hs_arena_memdup(a, values, p->n_sample_types * sizeof *values);
    if (!s.location_ids || !s.values)
        return -1;
    if (n_labels) {
        s.labels = hs_arena_memdup(a, labels, n_labels * sizeof *labels);
        if (!s.labels)
            return -1;
    }
    p->samples[p->n_samples++] = s;
    return 0;
}

/* ---- lookups ---- */

const hs_location *hs_profile_location(const hs_profile *p, uint64_t id)
{
    long i = hs_id_index_get(&p->ix->locs, p->locations, sizeof *p->locations, p->n_locations, id);
    return i < 0 ? NULL : &p->locations[i];
}

bool hs_profile_locations_dense(const hs_profile *p)
{
    return p->ix->locs.dense;
}

const hs_function *hs_profile_function(const hs_profile *p, uint64_t id)
{
    long i = hs_id_index_get(&p->ix->funcs, p->functions, sizeof *p->functions, p->n_functions, id);
    return i < 0 ? NULL : &p->functions[i];
}

const hs_mapping *hs_profile_mapping(const hs_profile *p, uint64_t id)
{
    long i = hs_id_index_get(&p->ix->maps, p->mappings, sizeof *p->mappings, p->n_mappings, id);
    return i < 0 ? NULL : &p->mappings[i];
}

#define HS_BUILD_IDS(p, map, arr, n) \
    hs_id_index_build(&(p)->ix->map, (p)->arr, sizeof *(p)->arr, (p)->n)

int hs_profile_reindex(hs_profile *p, char *err, size_t errlen)
{
    if (HS_BUILD_IDS(p, maps, mappings, n_mappings) != 0) {
        snprintf(err, errlen, "zero or duplicate mapping id");
        return -1;
    }
    if (HS_BUILD_IDS(p, funcs, functions, n_functions) != 0) {
        snprintf(err, errlen, "zero or duplicate function id");
        return -1;
    }
    if (HS_BUILD_IDS(p, locs, locations, n_locations) != 0) {
        snprintf(err, errlen, "zero or duplicate location id");
        return -1;
    }
    hs_intern_free(&p->ix->strs);
    hs_intern_free(&p->ix->fdedup);
    return 0;
}

/* ---- sample types ---- */

int hs_profile_sample_index(const hs_profile *p, const char *spec)
{
    if (!spec || !*spec)
        return -1;
    for (size_t i = 0; i < p->n_sample_types; i++)
        if (strcmp(hs_profile_string(p, p->sample_types[i].type), spec) == 0)
            return (int)i;
    char *end;
    unsigned long v = strtoul(spec, &end, 10);
    if (*end || spec[0] < '0' || spec[0] > '9' || v >= p->n_sample_types)
        return -1;
    return (int)v;
}

int hs_profile_default_index(const hs_profile *p)
{
    if (p->default_sample_type > 0) {
        const char *want = hs_profile_string(p, p->default_sample_type);
        for (size_t i = 0; i < p->n_sample_types; i++)
            if (strcmp(hs_profile_string(p, p->sample_types[i].type), want) == 0)
                return (int)i;
    }
    return (int)p->n_sample_types - 1;
}
