/* hashmap.c — hs_hmap (see hashmap.h): open addressing, linear probing,
 * capacity doubled when the load would pass 1/2, deletion by backward shift
 * (no tombstones, so lookups never slow down after many deletions). */
#include "base/hashmap.h"
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>

static size_t hs_hmap_home(const hs_hmap *m, uint64_t key)
{
    return (size_t)hs_hmap_mix(key) & (m->cap - 1);
}

void hs_hmap_free(hs_hmap *m)
{
    free(m->e);
    free(m->used);
    memset(m, 0, sizeof *m);
}

void hs_hmap_clear(hs_hmap *m)
{
    if (m->cap)
        memset(m->used, 0, m->cap);
    m->n = 0;
}

/* Insert into a table known to have room and (for put) not to hold key. */
static void hs_hmap_insert_new(hs_hmap *m, uint64_t key, uint64_t val)
{
    size_t mask = m->cap - 1, i = hs_hmap_home(m, key);
    while (m->used[i])
        i = (i + 1) & mask;
    m->used[i] = 1;
    m->e[i] = (hs_hmap_entry){key, val};
    m->n++;
}

static int hs_hmap_resize(hs_hmap *m, size_t cap)
{
    hs_hmap g = {.cap = cap};
    if (cap > SIZE_MAX / sizeof *g.e)
        return -1;
    g.e = malloc(cap * sizeof *g.e);
    g.used = hs_table_calloc(cap, 1); /* probes read it before insertions write it */
    if (!g.e || !g.used) {
        free(g.e);
        free(g.used);
        return -1;
    }
    /* old slot order keeps entries of one key in the same probing order */
    for (size_t i = 0; i < m->cap; i++)
        if (m->used[i])
            hs_hmap_insert_new(&g, m->e[i].key, m->e[i].val);
    free(m->e);
    free(m->used);
    *m = g;
    return 0;
}

int hs_hmap_reserve(hs_hmap *m, size_t n)
{
    if (n > SIZE_MAX / 4)
        return -1;
    if (n * 2 <= m->cap)
        return 0;
    size_t cap = m->cap ? m->cap : 16;
    while (cap < n * 2)
        cap <<= 1;
    return hs_hmap_resize(m, cap);
}

int hs_hmap_init(hs_hmap *m, size_t hint)
{
    memset(m, 0, sizeof *m);
    return hs_hmap_reserve(m, hint ? hint : 8);
}

/* Slot holding key, or (size_t)-1. */
static size_t hs_hmap_find(const hs_hmap *m, uint64_t key)
{
    if (m->cap == 0)
        return (size_t)-1;
    size_t mask = m->cap - 1;
    for (size_t i = hs_hmap_home(m, key);; i = (i + 1) & mask) {
        if (!m->used[i])
            return (size_t)-1;
        if (m->e[i].key == key)
            return i;
    }
}

bool hs_hmap_get(const hs_hmap *m, uint64_t key, uint64_t *val)
{
    size_t i = hs_hmap_find(m, key);
    if (i == (size_t)-1)
        return false;
    *val = m->e[i].val;
    return true;
}

uint64_t *hs_hmap_slot(hs_hmap *m, uint64_t key, bool *inserted)
{
    size_t i = hs_hmap_find(m, key);
    if (i != (size_t)-1) {
        if (inserted)
            *inserted = false;
        return &m->e[i].val;
    }
    if (hs_hmap_reserve(m, m->n + 1) != 0)
        return NULL;
    size_t mask = m->cap - 1;
    for (i = hs_hmap_home(m, key); m->used[i]; i = (i + 1) & mask)
        ;
    m->used[i] = 1;
    m->e[i] = (hs_hmap_entry){key, 0};
    m->n++;
    if (inserted)
        *inserted = true;
    return &m->e[i].val;
}

int hs_hmap_put(hs_hmap *m, uint64_t key, uint64_t val)
{
    uint64_t *v = hs_hmap_slot(m, key, NULL);
    if (!v)
        return -1;
    *v = val;
    return 0;
}

int hs_hmap_add(hs_hmap *m, uint64_t key, uint64_t val)
{
    if (hs_hmap_reserve(m, m->n + 1) != 0)
        return -1;
    hs_hmap_insert_new(m, key, val);
    return 0;
}

bool hs_hmap_next(const hs_hmap *m, uint64_t key, size_t *it, uint64_t *val)
{
    if (m->cap == 0)
        return false;
    size_t mask = m->cap - 1;
    size_t i = *it == HS_HMAP_START ? hs_hmap_home(m, key) : ((*it + 1) & mask);
    for (; m->used[i]; i = (i + 1) & mask)
        if (m->e[i].key == key) {
            *it = i;
            *val = m->e[i].val;
            return true;
        }
    *it = i;
    return false;
}

bool hs_hmap_del(hs_hmap *m, uint64_t key)
{
    size_t i = hs_hmap_find(m, key);
    if (i == (size_t)-1)
        return false;
    size_t mask = m->cap - 1;
    /* backward shift: pull later entries of the cluster into the hole when
     * their home slot is not between the hole and them (cyclically) */
    for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t h = hs_hmap_home(m, m->e[j].key);
        bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (stays)
            continue;
        m->e[i] = m->e[j];
        i = j;
    }
    m->used[i] = 0;
    m->n--;
    return true;
}

bool hs_hmap_each(const hs_hmap *m, size_t *it, uint64_t *key, uint64_t *val)
{
    for (size_t i = *it == HS_HMAP_START ? 0 : *it + 1; i < m->cap; i++)
        if (m->used[i]) {
            *it = i;
            *key = m->e[i].key;
            *val = m->e[i].val;
            return true;
        }
    *it = m->cap;
    return false;
}

/* Eight bytes per step (a byte-at-a-time FNV was the cost of interning
 * every string of every uploaded profile); only ever used for in-memory
 * maps, so its values may change between builds. */
uint64_t hs_hmap_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ULL ^ seed ^ ((uint64_t)n * 0x9E3779B97F4A7C15ULL);
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 32;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 32;
    }
    return hs_hmap_mix(h);
}
