/* query_cache.h — an LRU of stack records, bounded in bytes, shared by the
 * query threads (query_cache.c). Private to src/server. */
#ifndef HS_SERVER_QUERY_CACHE_H
#define HS_SERVER_QUERY_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "store/store.h"

typedef struct hs_stack_cache hs_stack_cache;

typedef struct {
    size_t entries, bytes;
    uint64_t hits, misses;
} hs_stack_cache_info;

/* NULL on out of memory. */
hs_stack_cache *hs_stack_cache_new(size_t max_bytes);
void hs_stack_cache_free(hs_stack_cache *c);
void hs_stack_cache_stats(hs_stack_cache *c, hs_stack_cache_info *out);
/* Rename records fetched from the store with n (see query_cache.c). */
struct hs_names;
void hs_stack_cache_set_names(hs_stack_cache *c, struct hs_names *n);

/* The merged profile of m's rows (hs_stack_build_profile) with their
 * records through the cache: records found in c are not fetched; the
 * others are fetched from st and kept. c may be NULL (no cache). On failure *store_rc is the store's error (HS_STORE_UNAVAILABLE:
 * the database is down), or 0 when the store was not at fault. */
hs_profile *hs_stack_cache_build(hs_stack_cache *c, hs_store *st, const hs_store_merged *m, size_t *missing,
                                 int *store_rc, char *err, size_t errlen);

/* The records of m's rows, fetched as hs_stack_cache_build fetches them:
 * rec[i], len[i] (arrays of m->n_rows) are row i's record, NULL when the
 * store has none; they live until hs_row_records_free. NULL on failure
 * (*store_rc as above). */
typedef struct hs_row_records hs_row_records;
hs_row_records *hs_stack_cache_records(hs_stack_cache *c, hs_store *st, const hs_store_merged *m,
                                       const unsigned char **rec, size_t *len, int *store_rc, char *err,
                                       size_t errlen);
void hs_row_records_free(hs_row_records *r);

#endif
