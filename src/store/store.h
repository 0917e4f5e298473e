/* store.h — the profile store: one interface, several backends.
 *
 * `hotspur serve` keeps every uploaded profile here and asks it the questions
 * the query API answers. The interface is shaped so that the heavy work (the
 * merge of many profiles) is a GROUP BY inside the database, never a loop over
 * profiles in the server:
 *
 *   - a profile is decomposed (stack_decompose.c) into stacks and samples. A stack is
 *     the frames of one sample, leaf first, plus that sample's labels, encoded
 *     as one blob (the "stack record", format below) and named by a 64-bit
 *     hash of that blob. Stacks are stored once, whatever the number of
 *     profiles that use them;
 *   - a profile row holds service, type, version, labels, start, duration,
 *     its sample types and its totals; sample rows are (profile, stack hash,
 *     values);
 *   - a merge returns one row per distinct stack hash with summed values and
 *     the number of profiles merged; the caller then fetches the stack
 *     records it needs (immutable by hash, so any cache is always right).
 *
 * Backends: sqlite*.c ("sqlite:DIR", or a plain directory path) and
 * clickhouse*.c ("clickhouse://HOST:PORT/DB"). Every backend passes the same
 * suite (tests/unit/test_store.c). All functions are safe to call from
 * several threads at once on one hs_store. Errors are return values: -1 (or
 * NULL) with a one-line message in err. A backend that cannot reach its
 * database returns HS_STORE_UNAVAILABLE so the server can answer 503.
 *
 * Times are nanoseconds since the Unix epoch. A profile is selected by a time
 * range when its start lies in [from_ns, until_ns).
 */
#ifndef HS_STORE_STORE_H
#define HS_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

#define HS_STORE_MAX_VALUES 4 /* sample types per profile (Go's heap has 4) */
#define HS_STORE_UNAVAILABLE (-2) /* the database is down or timed out */
#define HS_STORE_REFUSED (-3)     /* the profile conflicts with what is stored: the client's error */
#define HS_STORE_FULL (-4)        /* no room to write (disk full): retry later */

typedef struct hs_store hs_store;

typedef struct {
    const char *key, *value;
} hs_store_label;

/* The sample types of a profile type, e.g. cpu: samples/count,
 * cpu/nanoseconds. Profiles of one (service, type) must agree on them. */
typedef struct {
    size_t n;
    const char *type[HS_STORE_MAX_VALUES];
    const char *unit[HS_STORE_MAX_VALUES];
    int default_index; /* the sample type reports show by default */
    const char *period_type, *period_unit;
    int64_t period;
} hs_store_types;

/* "samples/count, cpu/nanoseconds" into out (truncated to len). */
void hs_store_types_format(const hs_store_types *t, char *out, size_t len);

/* One sample row of a profile: a stack hash and its values. */
typedef struct {
    uint64_t stack;
    int64_t values[HS_STORE_MAX_VALUES];
} hs_store_sample;

/* One stack record: its hash and encoded blob (see stack.h). */
typedef struct {
    uint64_t hash;
    const void *data;
    size_t len;
} hs_store_stack;

/* One profile, decomposed, ready to be stored. */
typedef struct {
    char id[33];          /* idempotency key: a profile with a known id is not stored again */
    const char *service;  /* non-empty */
    const char *type;     /* cpu, wall, heap, lock, or a foreign profile's type name */
    const char *version;  /* may be "" */
    const hs_store_label *labels; /* profile labels (instance, zone, custom), sorted by key */
    size_t n_labels;
    int64_t start_ns, duration_ns;
    hs_store_types types;
    int64_t totals[HS_STORE_MAX_VALUES]; /* sum over samples, per sample type */
    const hs_store_sample *samples;      /* one per distinct stack */
    size_t n_samples;
    const hs_store_stack *stacks;        /* the records of every stack samples use */
    size_t n_stacks;
} hs_store_profile;

/* What to select. NULL / 0 members select everything. */
typedef struct {
    const char *service;          /* required by merge/series/profiles */
    const char *type;             /* required by merge/series/profiles */
    const char *const *versions;  /* any of these (n_versions == 0: all) */
    size_t n_versions;
    const hs_store_label *labels; /* every one must match exactly */
    size_t n_labels;
    int64_t from_ns, until_ns;    /* until_ns == 0: no upper bound */
    const char *const *ids;       /* only these profiles (n_ids == 0: all) */
    size_t n_ids;
} hs_store_query;

/* A merged stack: summed values over the selected profiles. */
typedef struct {
    uint64_t stack;
    int64_t values[HS_STORE_MAX_VALUES];
} hs_store_row;

/* The result of a merge; free with hs_store_merged_free. */
typedef struct {
    hs_store_types types;    /* strings owned by the result */
    int64_t n_profiles;      /* profiles merged */
    int64_t totals[HS_STORE_MAX_VALUES];
    int64_t min_start_ns, max_end_ns;
    hs_store_row *rows;      /* one per distinct stack, any order */
    size_t n_rows;
    void *owned;             /* backend's allocations */
} hs_store_merged;
/* (rows and owned are each one malloc'd block or NULL: hs_store_merged_free
 * frees both. With no profile selected n_rows is 0; types are then those of
 * (service, type) if known, else n == 0.) */

/* One point of a time series: profiles starting in [t_ns, t_ns + step). */
typedef struct {
    int64_t t_ns;
    int64_t n_profiles;
    int64_t totals[HS_STORE_MAX_VALUES];
} hs_store_point;

/* One stored profile's row (the profile list, the weight filter). */
typedef struct {
    char id[33];
    char *version;
    int64_t start_ns, duration_ns;
    int64_t totals[HS_STORE_MAX_VALUES];
} hs_store_profile_row;

typedef struct {
    int64_t profiles, samples, stacks; /* rows */
    int64_t bytes;                     /* on disk, as the backend knows it */
} hs_store_stats;

/* Open (creating the schema if needed, idempotently) the store named by
 * url: "sqlite:DIR", a plain directory path, or "clickhouse://HOST:PORT/DB". */
hs_store *hs_store_open(const char *url, char *err, size_t errlen);
void hs_store_close(hs_store *s);

/* Store profiles in one batch (one transaction / one insert per table).
 * Returns 0 only once the rows are durable (fsync'd WAL, or accepted by the
 * database); profiles whose id is already stored are skipped, counted in
 * *duplicates (may be NULL). HS_STORE_UNAVAILABLE if the database is down,
 * HS_STORE_FULL if it has no room, HS_STORE_REFUSED for sample types that
 * differ from the stored ones (the message names both).
 * The batch is one transaction: a profile the backend refuses (sample types
 * that differ from those stored for its (service, type), a label key given
 * twice, a sample whose stack record is neither given nor stored) fails
 * the whole batch, with a message naming the profile. */
int hs_store_put(hs_store *s, const hs_store_profile *const *profiles, size_t n,
                 size_t *duplicates, char *err, size_t errlen);
/* hs_store_put that also says which profiles it skipped: dup[i] is set to
 * 1 when profiles[i]'s id was already stored or repeats an earlier profile
 * of the batch, else 0 (dup: n bytes; only meaningful when it returns 0). */
int hs_store_put_marked(hs_store *s, const hs_store_profile *const *profiles, size_t n,
                        unsigned char *dup, size_t *duplicates, char *err, size_t errlen);

/* How `hotspur serve` groups uploads into puts for a backend (its group
 * commit, server/batch.c): at most max_profiles per put; a put waits up to
 * wait_ms from its first upload for more; up to writers puts are in flight
 * at once, but while one is, the next grows until it holds min_parallel
 * profiles (or its wait is over); linger: wait the whole wait_ms (else the
 * put goes as soon as no upload is announced, so a lone upload does not
 * wait). Each backend has its defaults (ops->batching). */
typedef struct {
    size_t max_profiles;
    int wait_ms;
    int writers;
    int linger; /* 1 or 0 */
    size_t min_parallel;
} hs_store_batching;
#define HS_STORE_BATCH_MAX_PROFILES 1024 /* the largest max_profiles accepted */
#define HS_STORE_BATCH_MAX_WAIT_MS 10000
#define HS_STORE_BATCH_MAX_WRITERS 16
/* s's defaults, with the fields of over that are not 0 in their place
 * (over may be NULL; there wait_ms < 0 means no wait and linger < 0 no
 * linger). */
void hs_store_batching_get(const hs_store *s, const hs_store_batching *over, hs_store_batching *out);

/* Listings for the selectors, over profiles selected by q (service/type may
 * be NULL). Each returns a malloc'd array of malloc'd strings, sorted, in
 * *out and its length in *n; free with hs_store_strings_free. */
int hs_store_services(hs_store *s, const hs_store_query *q, char ***out, size_t *n, char *err, size_t errlen);
int hs_store_types_of(hs_store *s, const hs_store_query *q, char ***out, size_t *n, char *err, size_t errlen);
int hs_store_versions(hs_store *s, const hs_store_query *q, char ***out, size_t *n, char *err, size_t errlen);
int hs_store_label_names(hs_store *s, const hs_store_query *q, char ***out, size_t *n, char *err, size_t errlen);
int hs_store_label_values(hs_store *s, const hs_store_query *q, const char *name, char ***out, size_t *n,
                          char *err, size_t errlen);
void hs_store_strings_free(char **v, size_t n);
/* The stores beside this one whose names are this one's plus suffix plus X,
 * X each (sorted; free with hs_store_strings_free): a ClickHouse store's
 * databases named DB + suffix + X. A SQLite store has none here (its
 * tenants' directories are found by the server). */
int hs_store_siblings(hs_store *s, const char *suffix, char ***out, size_t *n, char *err, size_t errlen);

/* The sample types of (q->service, q->type); 0, or -1 if there is no such
 * profile. Strings are owned by the store until it is closed. */
int hs_store_type_info(hs_store *s, const hs_store_query *q, hs_store_types *out, char *err, size_t errlen);

/* Merge the profiles selected by q: GROUP BY stack in the database. */
int hs_store_merge(hs_store *s, const hs_store_query *q, hs_store_merged *out, char *err, size_t errlen);
void hs_store_merged_free(hs_store_merged *m);

/* Fetch stack records by hash; calls fn once per found hash (data valid
 * during the call). Unknown hashes are skipped. */
int hs_store_get_stacks(hs_store *s, const uint64_t *hashes, size_t n,
                        void (*fn)(void *arg, uint64_t hash, const void *data, size_t len), void *arg,
                        char *err, size_t errlen);

/* Totals per time bucket of step_ns over [from_ns, until_ns) for q; only
 * buckets with profiles are returned, in time order. Free *out with free(). */
int hs_store_series(hs_store *s, const hs_store_query *q, int64_t step_ns, hs_store_point **out, size_t *n,
                    char *err, size_t errlen);

/* The selected profiles' rows, in start order, at most limit (0: all).
 * Free with hs_store_profile_rows_free. */
int hs_store_profiles(hs_store *s, const hs_store_query *q, size_t limit, hs_store_profile_row **out,
                      size_t *n, char *err, size_t errlen);
void hs_store_profile_rows_free(hs_store_profile_row *rows, size_t n);

/* Delete every profile that started before before_ns (none when
 * before_ns <= 0), their samples and the stacks no profile uses any more;
 * reclaim the space. `hotspur serve` calls it every hour, so a backend
 * also does its upkeep here: ClickHouse compacts the finished days (every
 * partition of a day before today, UTC, that holds several parts in the
 * tables merges read whole becomes one part). */
int hs_store_retain(hs_store *s, int64_t before_ns, char *err, size_t errlen);

int hs_store_stats_get(hs_store *s, hs_store_stats *out, char *err, size_t errlen);

/* ---- the backend vtable (store.c dispatches; backends fill one) ---- */

typedef struct hs_store_ops {
    const char *name;
    void (*close)(hs_store *s);
    /* dup: n bytes, never NULL (hs_store_put_marked) */
    int (*put)(hs_store *s, const hs_store_profile *const *profiles, size_t n, unsigned char *dup, char *err,
               size_t errlen);
    int (*strings)(hs_store *s, int what, const hs_store_query *q, const char *name, char ***out, size_t *n,
                   char *err, size_t errlen);
    int (*type_info)(hs_store *s, const hs_store_query *q, hs_store_types *out, char *err, size_t errlen);
    int (*merge)(hs_store *s, const hs_store_query *q, hs_store_merged *out, char *err, size_t errlen);
    int (*get_stacks)(hs_store *s, const uint64_t *hashes, size_t n,
                      void (*fn)(void *arg, uint64_t hash, const void *data, size_t len), void *arg, char *err,
                      size_t errlen);
    int (*series)(hs_store *s, const hs_store_query *q, int64_t step_ns, hs_store_point **out, size_t *n,
                  char *err, size_t errlen);
    int (*profiles)(hs_store *s, const hs_store_query *q, size_t limit, hs_store_profile_row **out, size_t *n,
                    char *err, size_t errlen);
    int (*retain)(hs_store *s, int64_t before_ns, char *err, size_t errlen);
    int (*stats)(hs_store *s, hs_store_stats *out, char *err, size_t errlen);
    hs_store_batching batching; /* the server's group commit for it (zeros: 128, 10 ms, 1, no linger) */
} hs_store_ops;

/* what for ops->strings */
enum { HS_STORE_SERVICES, HS_STORE_TYPES, HS_STORE_VERSIONS, HS_STORE_LABEL_NAMES, HS_STORE_LABEL_VALUES,
       HS_STORE_SIBLINGS /* name: the suffix (hs_store_siblings) */ };

/* Every backend's handle starts with this. */
struct hs_store {
    const hs_store_ops *ops;
};

hs_store *hs_store_sqlite_open(const char *dir, char *err, size_t errlen);
hs_store *hs_store_clickhouse_open(const char *url, char *err, size_t errlen);

#endif
