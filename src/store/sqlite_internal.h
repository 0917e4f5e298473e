/* sqlite_internal.h — what the SQLite store's files share (private to
 * src/store/sqlite*.c): the store handle, its reader pool and kinds, small
 * arithmetic, and the functions one file calls in another. sqlite.c says
 * how the store works. */
#ifndef HS_STORE_SQLITE_INTERNAL_H
#define HS_STORE_SQLITE_INTERNAL_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/hashmap.h"
#include "base/bytes.h"
#include "store/store.h"

#define ERR(...) hs_err(err, errlen, __VA_ARGS__)
#define N_READERS 4
#define HOUR_NS 3600000000000LL
#define STACK_CACHE_MAX (4u << 20) /* entries; the cache is cleared past this */


/* ---- small helpers ---- */

static inline int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static inline uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}


/* ---- the store ---- */

typedef struct {
    char *service, *type;
    int64_t kid;
    hs_store_types types;
    char *strs;
} kind;

typedef struct {
    sqlite3 *db;
    sqlite3_stmt *id_hash;      /* SELECT hash FROM stacks WHERE id=? */
    sqlite3_stmt *hash_record;  /* SELECT record FROM stacks WHERE hash=? */
    sqlite3_stmt *kind_get;     /* SELECT kid,... FROM kinds WHERE service=? AND type=? */
    bool busy;
} reader;

typedef struct {
    hs_store base;
    char *path;
    int lock_fd;

    pthread_mutex_t wmu; /* the writer and everything below up to the readers */
    sqlite3 *w;
    sqlite3_stmt *s_exists, *s_kind_get, *s_kind_ins, *s_stack_get, *s_stack_ins, *s_stack_touch, *s_prof_ins,
        *s_label_ins;
    hs_idmap cache; /* stack hash -> index into c_id/c_hour */
    uint64_t *c_hash;
    int64_t *c_id, *c_hour;
    size_t c_n, c_cap;

    pthread_mutex_t pmu; /* the reader pool */
    pthread_cond_t pcv;
    reader readers[N_READERS];
    int n_readers;

    pthread_mutex_t kmu; /* kinds handed out by type_info, kept until close */
    kind **kinds;
    size_t n_kinds;
} sq;

/* The store's code for SQLite's error rc: busy is "unavailable", no room
 * (SQLITE_FULL, or an I/O error that was ENOSPC/EDQUOT) is "full". */

/* ---- connections, schema, the reader pool (sqlite.c) ---- */

int sq_sql_fail(sqlite3 *db, int rc, const char *what, char *err, size_t errlen);
int sq_exec(sqlite3 *db, const char *sql, char *err, size_t errlen);
int sq_prep(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t errlen);
void sq_kind_free(kind *k);
reader *sq_reader_get(sq *s, char *err, size_t errlen);
void sq_reader_put(sq *s, reader *r);

/* ---- put (sqlite_put.c) ---- */

void sq_cache_clear(sq *s);
int sq_put(hs_store *s_, const hs_store_profile *const *profiles, size_t n, unsigned char *dup, char *err,
                  size_t errlen);

/* ---- selections, kinds, merge, listings (sqlite_query.c) ---- */

int sq_strings(hs_store *s_, int what, const hs_store_query *q, const char *name, char ***out, size_t *n,
                      char *err, size_t errlen);
int sq_type_info(hs_store *s_, const hs_store_query *q, hs_store_types *out, char *err, size_t errlen);
int sq_merge(hs_store *s_, const hs_store_query *q, hs_store_merged *out, char *err, size_t errlen);
int sq_get_stacks(hs_store *s_, const uint64_t *hashes, size_t n,
                         void (*fn)(void *arg, uint64_t hash, const void *data, size_t len), void *arg, char *err,
                         size_t errlen);
int sq_series(hs_store *s_, const hs_store_query *q, int64_t step_ns, hs_store_point **out, size_t *n,
                     char *err, size_t errlen);
int sq_profiles(hs_store *s_, const hs_store_query *q, size_t limit, hs_store_profile_row **out, size_t *n,
                       char *err, size_t errlen);

#endif
