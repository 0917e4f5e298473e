/* clickhouse_internal.h — what the ClickHouse store's files share (private to
 * src/store/clickhouse*.c): the limits, the store handle, the RowBinary
 * writers and reader (static inline: inserts call them per row), the
 * selection types, and the functions one file calls in another.
 * clickhouse.c says how the store works. */
#ifndef HS_STORE_CLICKHOUSE_INTERNAL_H
#define HS_STORE_CLICKHOUSE_INTERNAL_H

#include "store/store.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hashmap.h"
#include "base/bytes.h"
#include "base/err.h"
#include "base/units.h"
#include "store/stack.h"

#define CH_POOL 8                 /* idle curl handles kept for reuse */
#define CH_MAX_RESPONSE (1u << 30) /* bytes of one answer */
#define CH_IN_CHUNK 4000           /* hashes per get_stacks query */
#define CH_DAY_NS (86400LL * 1000000000LL)
#define CH_MAX_BLOCK 8000000       /* rows of one put: one INSERT block */
#define CH_CACHE_MAX (1u << 21)    /* (day, stack) pairs known stored */
#define CH_BUCKET_NS (3600LL * 1000000000LL) /* a rollup bucket: one hour */
/* A merge of one label reads its whole hours from the label rollup only
 * with at least this many selected profiles per hour: the rollup holds a
 * row per (hour, stack) of the label's value, ~as many as the samples of
 * a few profiles, and a rare value (an instance: ~6 profiles an hour in
 * bench/store_ch.sh) reads fewer rows from its series' samples (72 ms
 * against 159 ms at 100 000 profiles there). */
#define CH_LABEL_ROLL_MIN 16
#define CH_MAX_ROLL_KEYS 64 /* keys of rollup_labels */
/* The feed of the rollups (ch_schema): its Buffer hands its rows over
 * CH_ROLL_DELAY seconds after the first (URL option rollup_delay), or at
 * CH_FEED_ROWS rows or CH_FEED_BYTES bytes. */
#define CH_ROLL_DELAY 10
#define CH_FEED_ROWS 1000000
#define CH_FEED_BYTES (256L << 20)
#define CH_TRUSTED_MAX 1024 /* (kind, day)s known complete: days_trusted */
#define CH_LOOKUPS 32       /* series lookups kept: ch_merge */

/* The row counts of samples per day (system.parts) a request read, as
 * one value: how many days, and the sum of a hash of each (day, rows). */
typedef struct {
    uint64_t n, sum;
} ch_fp;

/* A merge's series lookup (ch_merge): its SQL, the series ids it found,
 * the samples' days it saw, and what days_trusted said of them. */
typedef struct {
    char *sql;
    uint64_t *sids;
    size_t n;
    ch_fp fp;
    int trusted, no_day0;
} ch_lookup;
/* The hour of a row in the samples' ordering key; queries repeat this very
 * expression as a condition (ClickHouse 18.16 uses a key expression's own
 * conditions, not those on start_ns, to skip granules). */
#define CH_HOUR_KEY "intDiv(start_ns, 3600000000000)"
/* The stack column of a profile row this version writes: its sample rows
 * carry its labels (the label rollup counts only such profiles). */
#define CH_LABELLED 1
#define CH_STR_(x) #x
#define CH_STR(x) CH_STR_(x)
/* hotspur serve's group commit on ClickHouse (server/batch.c,
 * docs/fleet.md): every INSERT makes a part of each table (and the
 * rollup's), and ClickHouse's work per profile falls as parts grow (CPU
 * per profile ~9 ms at 4 profiles per INSERT, ~1.2 ms at 31:
 * bench/store_ch_ingest.sh), so a batch lingers 50 ms for company (at most
 * 20 INSERTs a second per instance; an agent does not mind 50 ms), and two
 * go at once when ClickHouse is slower than that. */
#define CH_BATCH_PROFILES 512
#define CH_BATCH_WAIT_MS 50
#define CH_BATCH_WRITERS 2
#define CH_BATCH_MIN_PARALLEL 16 /* with --batch-linger no */


/* ---- the store handle ---- */

typedef struct {
    char *host;
    int port;
} ch_host;

/* Type infos handed out by type_info stay valid until close. */
typedef struct ch_types_entry {
    struct ch_types_entry *next;
    char *service, *type;
    hs_store_types types;
    char *strings; /* one block holding the strings of types */
} ch_types_entry;

typedef struct {
    hs_store base;
    char *db, *cluster, *userpwd;
    ch_host *hosts;
    size_t n_hosts;
    long connect_ms, timeout_ms;
    const char *local; /* "_local" in a cluster, "" otherwise */
    pthread_mutex_t mu;
    CURL *pool[CH_POOL];
    size_t n_pool;
    size_t next_host; /* the host that answered last */
    int schema_ok;
    int rollup; /* merges may read the rollup (URL option rollup=0: never) */
    long label_roll_min; /* profiles per hour for the label rollup */
    long roll_delay;     /* seconds the rollups' feed holds rows (rollup_delay) */
    int put_any;         /* a put stored rows: close hands the feed over */
    char **roll_keys;    /* the label keys the label rollup holds (sorted) */
    size_t n_roll_keys;
    hs_idmap known; /* stack hash -> day, for (day, stack) pairs stored */
    ch_types_entry *types;
    /* The retention watermark the last merge or series saw: each builds its SQL
     * with it and reads the watermark in the same request, redoing the
     * request when it changed (so it only saves a round trip). */
    int64_t merge_wm;
    int merge_wm_known;
    /* The (kind, day)s whose series tables were found complete, with the
     * samples' row count of the day then (days_trusted). */
    struct {
        uint64_t kind, rows;
        uint16_t day;
    } trusted[CH_TRUSTED_MAX];
    size_t n_trusted;
    ch_lookup lookups[CH_LOOKUPS];
    size_t next_lookup;
} ch_store;


/* ---- request bodies: base/bytes.h ---- */

/* A ClickHouse string literal: quotes and backslashes escaped, control
 * bytes as \xHH; other bytes (UTF-8) as they are. */
static inline void buf_quote(hs_bytes *b, const char *s)
{
    hs_bytes_put(b, "'", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\'' || c == '\\') {
            char e[2] = {'\\', (char)c};
            hs_bytes_put(b, e, 2);
        } else if (c < 0x20 || c == 0x7f) {
            hs_bytes_printf(b, "\\x%02x", c);
        } else {
            hs_bytes_put(b, s, 1);
        }
    }
    hs_bytes_put(b, "'", 1);
}

/* RowBinary writers: little-endian integers, LEB128 lengths. */
static inline void rb_u64(hs_bytes *b, uint64_t v)
{
    unsigned char x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    hs_bytes_put(b, x, 8);
}
static inline void rb_i64(hs_bytes *b, int64_t v) { rb_u64(b, (uint64_t)v); }
static inline void rb_u16(hs_bytes *b, uint16_t v)
{
    unsigned char x[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    hs_bytes_put(b, x, 2);
}
static inline void rb_u8(hs_bytes *b, uint8_t v) { hs_bytes_put(b, &v, 1); }
static inline void rb_bytes(hs_bytes *b, const void *p, size_t n)
{
    hs_bytes_uv(b, n);
    hs_bytes_put(b, p, n);
}
static inline void rb_str(hs_bytes *b, const char *s) { rb_bytes(b, s ? s : "", s ? strlen(s) : 0); }

/* RowBinary reader over an answer; bad is set on a short or malformed
 * answer (and every later read returns 0). */
typedef struct {
    const unsigned char *p, *end;
    int bad;
} ch_rd;

static inline int rd_more(const ch_rd *r) { return !r->bad && r->p < r->end; }

static inline uint64_t rd_u64(ch_rd *r)
{
    if (r->bad || r->end - r->p < 8) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += 8;
    return v;
}
static inline int64_t rd_i64(ch_rd *r) { return (int64_t)rd_u64(r); }
static inline uint8_t rd_u8(ch_rd *r)
{
    if (r->bad || r->p >= r->end) {
        r->bad = 1;
        return 0;
    }
    return *r->p++;
}
static inline uint64_t rd_varint(ch_rd *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        uint8_t c = rd_u8(r);
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}
/* A string's bytes (not terminated) and length. */
static inline const unsigned char *rd_bytes(ch_rd *r, size_t *len)
{
    uint64_t n = rd_varint(r);
    if (r->bad || n > (uint64_t)(r->end - r->p)) {
        r->bad = 1;
        *len = 0;
        return NULL;
    }
    const unsigned char *p = r->p;
    r->p += n;
    *len = (size_t)n;
    return p;
}
static inline char *rd_strdup(ch_rd *r)
{
    size_t n;
    const unsigned char *p = rd_bytes(r, &n);
    if (r->bad)
        return NULL;
    char *s = malloc(n + 1);
    if (!s) {
        r->bad = 1;
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}


/* The series ids a merge looked up before its request (ch_merge, when
 * few), passed down to the SQL it builds: where_sids lists them. */
typedef struct {
    const uint64_t *v;
    size_t n;
    int trusted; /* the series tables hold every profile of the range's days (days_trusted) */
    int no_day0; /* and samples has no row in day 0, where profiles before 1970 are */
    int fp_check; /* the request reads the samples' days again (day_rows) ... */
    ch_fp fp_seen; /* ... and they were these */
} ch_sids;

/* How a merge selects its rows. */
typedef enum {
    CH_ALL,    /* no filter: every row of the kind and range but the losers */
    CH_SERIES, /* versions or labels: the selected series' rows (where_sids) */
    CH_CHOSEN, /* the exact way (where_chosen): ids, or the others unsure */
} ch_sel;

enum { CH_QUERY, CH_INSERT };

/* where_rows' row for the profiles table, which has no row type. */
#define CH_NARROW (-1)

/* ---- the HTTP pool (clickhouse_http.c) ---- */

int ch_http(ch_store *s, size_t h, int kind, const char *sql, const hs_bytes *body, const char *settings,
                   hs_bytes *out, int *connect_failed, char *err, size_t errlen);
int ch_any(ch_store *s, int kind, const char *sql, const hs_bytes *body, const char *settings, hs_bytes *out,
                  char *err, size_t errlen);
int ch_query(ch_store *s, const char *sql, hs_bytes *out, char *err, size_t errlen);
int ch_each(ch_store *s, const char *sql, char *err, size_t errlen);
/* Hand what the rollups' feed holds to the rollups now, on every host. */
int ch_flush_rollups(ch_store *s, char *err, size_t errlen);

/* ---- schema and URL (clickhouse_schema.c) ---- */

int ch_schema(ch_store *s, char *err, size_t errlen);
int ch_cmp_str(const void *a, const void *b);
int ch_parse_url(ch_store *s, const char *url, char *err, size_t errlen);

/* ---- put (clickhouse_insert.c) ---- */

uint16_t ch_day_of(int64_t ns);
void ch_buf_day(hs_bytes *b, uint16_t day);
uint64_t ch_kind_of(const char *service, const char *type);
int ch_put(hs_store *base, const hs_store_profile *const *profiles, size_t n, unsigned char *marked,
                  char *err, size_t errlen);

/* ---- selections, listings, type info, stacks, series (clickhouse_query.c) ---- */

int ch_watermark(ch_store *s, int64_t *wm, char *err, size_t errlen);
int ch_wm_cached(ch_store *s, int64_t *wm);
void ch_wm_keep(ch_store *s, int64_t wm);
void ch_where_rows(hs_bytes *b, const hs_store_query *q, int64_t wm, int row);
void ch_where_attrs(hs_bytes *b, const hs_store_query *q);
void ch_where_profiles(hs_bytes *b, const hs_store_query *q, int64_t wm);
void ch_where_days(hs_bytes *b, const hs_store_query *q, int64_t wm);
void ch_fp_add(ch_fp *f, uint64_t day, uint64_t rows);
void ch_day_rows(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, const char *cols);
void ch_where_sids(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, const ch_sids *ids);
void ch_where_sel(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, ch_sel sel,
                      const ch_sids *ids, const uint64_t *losers, size_t n_losers);
void ch_where_samples(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, ch_sel sel,
                          const ch_sids *ids, const uint64_t *losers, size_t n_losers);
int ch_need_service_type(const hs_store_query *q, char *err, size_t errlen);
int ch_run(ch_store *s, hs_bytes *q, hs_bytes *ans, char *err, size_t errlen);
int ch_malformed(char *err, size_t errlen, const char *what);
int ch_strings(hs_store *base, int what, const hs_store_query *q, const char *name, char ***out, size_t *n,
                      char *err, size_t errlen);
int ch_types_dup(const hs_store_types *src, hs_store_types *dst, char **block);
int ch_kind_types(ch_store *s, const char *service, const char *type, const hs_store_types **out, char *err,
                      size_t errlen);
int ch_type_info(hs_store *base, const hs_store_query *q, hs_store_types *out, char *err, size_t errlen);
int ch_same_types(const hs_store_types *a, const hs_store_types *b);
int ch_get_stacks(hs_store *base, const uint64_t *hashes, size_t n,
                         void (*fn)(void *arg, uint64_t hash, const void *data, size_t len), void *arg, char *err,
                         size_t errlen);
int ch_series(hs_store *base, const hs_store_query *q, int64_t step_ns, hs_store_point **out, size_t *n,
                     char *err, size_t errlen);
int ch_profiles(hs_store *base, const hs_store_query *q, size_t limit, hs_store_profile_row **out,
                       size_t *n, char *err, size_t errlen);

/* ---- merge (clickhouse_merge.c) ---- */

int ch_find_losers(ch_store *s, const hs_store_query *q, int64_t wm, uint64_t **losers, size_t *n_losers,
                       char *err, size_t errlen);
int ch_merge(hs_store *base, const hs_store_query *q, hs_store_merged *out, char *err, size_t errlen);

#endif
