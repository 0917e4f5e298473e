/* decode_internal.h — what the pprof decoder's two files share: decode.c
 * (the two passes over whole bytes) and decode_feed.c (the samples decoded
 * while a gzip input is inflated, then decode.c for the rest). The decoder's
 * state, the wire primitives' fast path, and the steps decode_feed.c calls.
 * Private to src/profile/. */
#ifndef HS_PROFILE_DECODE_INTERNAL_H
#define HS_PROFILE_DECODE_INTERNAL_H

#include "profile/profile_internal.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hidden: the build is position-independent, and a default-visibility
 * function may be interposed, so the compiler would not use what it knows of
 * its body (which registers and memory it leaves alone) at the calls in the
 * hot loop (+1.2% instructions decoding the benchmark profile). */
#pragma GCC visibility push(hidden)

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct {
    const unsigned char *p, *end;
} hs_rd;

/* The lookahead over samples (hs_prefetch_samples): the map slots of the
 * samples SLOT ahead and the shared arrays of those ARRAY ahead are fetched;
 * the ring holds the hashes of the samples from the one decoded to SLOT
 * ahead. */
enum { HS_AHEAD_SLOT = 6, HS_AHEAD_ARRAY = 3, HS_AHEAD_RING = 8 };

/* A shared id array's key: the packed bytes it was decoded from (in the
 * decoder's own arena, freed with it), so that a later sample is matched by
 * one memcmp of its bytes instead of decoding and comparing its ids (equal
 * bytes, equal ids), with the array's class and length beside them so that
 * a match does not touch the array. */
typedef struct {
    uint64_t *ids;
    uint32_t n_ids, cls, len;
    unsigned char bytes[];
} hs_stack_key;

/* The shared id arrays by the hash of the packed bytes they were decoded
 * from: open addressing (linear probing, load <= 1/2) over slots that hold
 * the hash and the key (NULL: empty), so that a probe is one read of one
 * cache line. (hs_hmap keeps its slots' occupancy in a second array: a
 * second cache miss per sample, and the largest cost left in decoding a
 * large profile.) Several keys may share a hash; their order of probing
 * is their order of insertion. */
typedef struct {
    uint64_t h;
    hs_stack_key *key;
} hs_stack_slot;

typedef struct {
    hs_stack_slot *s;
    size_t cap, n; /* cap: a power of two */
} hs_stack_index;

typedef struct {
    const unsigned char *base; /* start of the input, for error offsets */
    hs_profile *p;
    size_t n_strings, n_types; /* final counts (pass 1) */
    char *err;
    size_t errlen;
    bool failed;
    uint64_t *scratch; /* location ids / values of one sample while decoding */
    size_t scratch_cap;
    hs_stack_index stacks; /* the shared id arrays, by the hash of their packed bytes */
    hs_arena keys;         /* their keys (hs_stack_key) */
    hs_arena *arena;       /* where strings, lines and id arrays go */
    const unsigned char *fail_at; /* the top-level field that failed (end: a later check) */
    _Atomic size_t *rest_done; /* the other part's thread: bytes it is done with (or NULL) */
    uint32_t *stack_of; /* per sample: its shared array's class, or UINT32_MAX */
    size_t n_classes;
    uint8_t *checked;   /* per class: its ids were validated */
    const unsigned char *pf_pos; /* lookahead: where sample pf_seq starts (NULL: */
    size_t pf_seq;               /* not a sample we can peek at) */
    struct {
        const unsigned char *ids; /* a packed id run hashed ahead, */
        uint64_t h;               /* its hash (reused when the sample is decoded) */
    } pf[HS_AHEAD_RING];          /* by sample index modulo the ring's size */
    int64_t *values; /* the values of samples from values_first on: n_types per sample, */
    size_t values_first; /* in sample order (in blocks: see hs_feed_samples) */
    bool release;   /* hand read pages of the input back (hs_profile_decode_pb) */
    size_t page;     /* the page size, a power of two */
    size_t released; /* bytes of the input handed back so far */
    size_t keep_from; /* nor the bytes from here on (the inflate may read them back) */
    /* samples decoded while the input was inflated (hs_feed_samples): the
     * fields from skip_from to skip_to, passed over by pass 2; when the final
     * count of sample types is not the spec_types they were decoded with,
     * the first of them fails as pass 2 would fail it */
    const unsigned char *skip_from, *skip_to;
    size_t spec_types;
    bool spec_wrong;
} hs_dec;

#define HS_FAIL(d, ...) (hs_dec_fail((d), __VA_ARGS__), -1)

/* Records the first error of d in its message (none: d NULL or failed). */
__attribute__((format(printf, 2, 3))) void hs_dec_fail(hs_dec *d, const char *fmt, ...);

/* ---- wire primitives ---- */

/* A varint past the fast path's: any length, the checks (errors into d). */
int hs_rd_varint_slow(hs_dec *d, hs_rd *r, uint64_t *v);

/* Fast paths for the one- to three-byte varints that are most of a
 * profile (indices, ids, small values); the rest and the checks go slow. */
static inline int hs_rd_varint(hs_dec *d, hs_rd *r, uint64_t *v)
{
    const unsigned char *q = r->p;
    if (r->end - q >= 3) {
        if (!(q[0] & 0x80)) {
            *v = q[0];
            r->p = q + 1;
            return 0;
        }
        if (!(q[1] & 0x80)) {
            *v = (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
            r->p = q + 2;
            return 0;
        }
        if (!(q[2] & 0x80)) {
            *v = (uint64_t)(q[0] & 0x7f) | (uint64_t)(q[1] & 0x7f) << 7 | (uint64_t)q[2] << 14;
            r->p = q + 3;
            return 0;
        }
    } else if (q < r->end && !(*q & 0x80)) {
        *v = *q;
        r->p = q + 1;
        return 0;
    }
    return hs_rd_varint_slow(d, r, v);
}

/* Counts of the top-level fields (pass 1). */
typedef struct {
    size_t strings, types, samples, mappings, locations, functions, comments;
} hs_counts;

/* ---- the steps decode_feed.c takes (decode.c) ---- */

/* An empty index with room for about `hint` / 2 arrays before it grows. */
int hs_stack_index_init(hs_stack_index *x, size_t hint);
/* Pass 1 over r (the bytes after those decoded while inflated): its
 * framing checked, its fields counted into *c. */
int hs_pass1(hs_dec *d, hs_rd r, hs_counts *c);
/* Decodes sample `index` (its field's bytes: sub) into d->p. */
int hs_dec_sample(hs_dec *d, hs_rd sub, size_t index);
/* Before sample `index` (whose field ends at `here`) is decoded: the
 * lookups of the samples after it fetched into the cache (a hint only). */
void hs_prefetch_samples(hs_dec *d, size_t index, const unsigned char *here,
                         const unsigned char *end);
/* Hands the pages of the input before `upto` back to the kernel. */
void hs_release_read(hs_dec *d, const unsigned char *upto);
/* After pass 1: the tables at their final sizes, pass 2, the ids checked.
 * The profile, or NULL with d's message (d freed either way). */
hs_profile *hs_decode_rest(hs_dec *d, hs_rd all, const hs_counts *c, int threads);
/* Frees d's own tables (not the profile, not stack_of). */
void hs_dec_free(hs_dec *d);

#pragma GCC visibility pop

#endif
