/* hashmap.h — the one hash map container of hotspur: 64-bit keys to 64-bit
 * values, open addressing with linear probing, load <= 1/2.
 *
 * It lives in src/base, below every layer (the profile model, the analysis,
 * the reports, the symbolizer, the store, the server, live), as Redis'
 * dict.c or SQLite's hash.c serve their code bases. (The agent's
 * signal-safe tables, src/agent/stacktab.c, stay their own: they must not
 * malloc.) Keys are mixed internally, so any key distribution works (small
 * ids, pointers, hashes). Two ways to use it:
 *  - a map: hs_hmap_get / hs_hmap_put (insert or overwrite) / hs_hmap_slot
 *    (find or insert, then write the value in place) / hs_hmap_del;
 *  - a multimap from a hash to candidates, the caller resolving collisions:
 *    hs_hmap_add (always inserts) and hs_hmap_next (the values stored under
 *    one key, in insertion order of probing).
 * A zeroed hs_hmap is a valid empty map. Functions that may allocate return
 * 0, or -1 on out of memory (the map is then unchanged). */
#ifndef HS_HASHMAP_H
#define HS_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t key, val;
} hs_hmap_entry;

typedef struct {
    hs_hmap_entry *e;
    uint8_t *used; /* 1 per occupied slot */
    size_t cap, n; /* cap: 0 or a power of two */
} hs_hmap;

/* Start value of the iterator of hs_hmap_next and hs_hmap_each. */
#define HS_HMAP_START ((size_t)-1)

/* Room for `hint` entries without growing (optional). */
int hs_hmap_init(hs_hmap *m, size_t hint);
void hs_hmap_free(hs_hmap *m);
/* Remove every entry, keep the memory. */
void hs_hmap_clear(hs_hmap *m);
/* Make sure `n` entries in all fit without growing. */
int hs_hmap_reserve(hs_hmap *m, size_t n);

/* The value under key (the first added, for a multimap). */
bool hs_hmap_get(const hs_hmap *m, uint64_t key, uint64_t *val);
/* Insert, or overwrite the value of an existing key. */
int hs_hmap_put(hs_hmap *m, uint64_t key, uint64_t val);
/* The value slot of key, inserted with value 0 if absent (*inserted then
 * true). NULL on out of memory. Valid until the next insertion. */
uint64_t *hs_hmap_slot(hs_hmap *m, uint64_t key, bool *inserted);
/* Remove one entry with this key; false when there is none. */
bool hs_hmap_del(hs_hmap *m, uint64_t key);

/* Multimap: insert even if the key is present. */
int hs_hmap_add(hs_hmap *m, uint64_t key, uint64_t val);
/* The next value stored under key: start with *it = HS_HMAP_START; false
 * when there are no more. No insertion may happen during one iteration. */
bool hs_hmap_next(const hs_hmap *m, uint64_t key, size_t *it, uint64_t *val);

/* Every entry, in slot order: start with *it = HS_HMAP_START. */
bool hs_hmap_each(const hs_hmap *m, size_t *it, uint64_t *key, uint64_t *val);

/* The mixer the map uses (splitmix64's finalizer), for callers that build
 * their own hash of several fields. */
static inline uint64_t hs_hmap_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Hint that key will be looked up soon: fetch its first slot into the
 * cache (a lookup in a large map is a cache miss; callers that know their
 * next keys overlap those misses with other work). */
static inline void hs_hmap_prefetch(const hs_hmap *m, uint64_t key)
{
    if (m->cap) {
        size_t i = (size_t)hs_hmap_mix(key) & (m->cap - 1);
        __builtin_prefetch(&m->used[i]);
        __builtin_prefetch(&m->e[i]);
    }
}

/* A hash of n bytes (eight per step), for keys made of strings or
 * byte runs; only for in-memory maps: its values may change between builds. */
uint64_t hs_hmap_hash_bytes(const void *p, size_t n, uint64_t seed);

/* ---- a multimap from a 64-bit hash to uint32 ids ----
 * The caller resolves collisions by comparing each candidate: the common
 * use of the map for interning (strtab.h, stack records, nodes). */
typedef hs_hmap hs_idmap;

static inline int hs_idmap_init(hs_idmap *m, size_t hint) { return hs_hmap_init(m, hint); }
static inline void hs_idmap_free(hs_idmap *m) { hs_hmap_free(m); }
/* Iterate candidates: start with *slot = HS_HMAP_START; returns the next id
 * stored under key, or UINT32_MAX when there is none. */
static inline uint32_t hs_idmap_next(const hs_idmap *m, uint64_t key, size_t *slot)
{
    uint64_t v;
    return hs_hmap_next(m, key, slot, &v) ? (uint32_t)v : UINT32_MAX;
}
static inline int hs_idmap_put(hs_idmap *m, uint64_t key, uint32_t id)
{
    return hs_hmap_add(m, key, id);
}

/* A 64-bit finalizer (MurmurHash3's fmix64) for callers combining several
 * fields into one key: h = hs_mix64(h ^ field). */
static inline uint64_t hs_mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

#endif
