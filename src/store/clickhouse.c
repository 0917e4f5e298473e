/* clickhouse.c — the fleet store: ClickHouse over its HTTP interface.
 *
 * URL: clickhouse://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/DB[?OPTIONS]
 *   cluster=NAME        a cluster of remote_servers: local tables on every
 *                       shard, Distributed tables over them. List one HTTP
 *                       address per shard (DDL and retention run on each;
 *                       inserts and queries go to any of them).
 *   timeout=SECONDS     total time per request (default 30)
 *   rollup=0|1          may merges read the rollup (default 1)
 *   label_rollup_min=N  a merge of one label reads the label rollup when
 *                       its selection has at least N profiles per whole
 *                       hour (default 16; 0: always)
 *   rollup_labels=K[,K...]  the label keys the label rollup holds (default
 *                       none: no label rollup rows at all); every
 *                       instance on one database must list the same
 *                       (each replaces the view with its own on open)
 *   connect_timeout=S   time to connect (default 2)
 * Inserts and queries go to the host that answered last, and to the next
 * one when it cannot be reached (every shard has the Distributed tables).
 *
 * Schema (created on open, idempotently; retried on every call until it
 * succeeds, so `hotspur serve` may start before ClickHouse):
 *
 *   stacks   (day Date, hash UInt64, record String)
 *            ReplacingMergeTree, PARTITION BY day, ORDER BY hash.
 *            Every stack a day's samples use has its record in that day's
 *            partition (a put writes those its process has not written
 *            for that day), so retention drops whole days of stacks
 *            with their profiles. Merges fold duplicate (day, hash) rows
 *            eventually; reads never depend on it (GROUP BY hash, any()).
 *   samples  one row per profile (rowtype = 0: id, service, type, labels,
 *            duration, sample types; v0..v3 = its totals) and one per
 *            sample (rowtype = 1: stack, v0..v3), both with day, kind (the
 *            XXH3 hash of service NUL type), start_ns, version, sid (the
 *            series id: XXH3 of version and labels), pid (the XXH3 hash of
 *            the id) and ins (below). MergeTree, PARTITION BY day, ORDER BY
 *            (rowtype, kind, hour, sid, start_ns, ins, stack), hour being
 *            intDiv(start_ns, 1 h) (CH_HOUR_KEY; queries state it next to
 *            their start_ns bounds): the profiles are one range of the
 *            key, a time range of one service and type another (whole
 *            hours, then the partial ones by start_ns), and within each
 *            hour a series' rows are together, so a version or label
 *            filter (sid IN ...) reads only its series' granules.
 *            index_granularity 1024 (not 8192): a granule then holds the
 *            samples of ~3 profiles instead of ~25.
 *   rollup   (day, kind, bucket, rowtype, stack, profiles, v0..v3)
 *            SummingMergeTree, PARTITION BY day, ORDER BY (kind, bucket,
 *            rowtype, stack): per hour (bucket = its first ns) the sums of
 *            the sample rows by stack (rowtype 1) and the count of profile
 *            rows (rowtype 0, profiles). profiles counts the sample rows of
 *            rowtype 1 rows: never 0, so a stack whose values are all 0
 *            (SummingMergeTree drops a row whose sums all are) stays, as
 *            in the samples' answer. Filled by ClickHouse itself, a
 *            MATERIALIZED VIEW over every block inserted into samples
 *            (folded within the block; background merges fold the rest,
 *            and reads always sum). A merge with no version, label or id
 *            filter reads the range's whole hours from it and only the
 *            partial hours at the ends from samples (or, for an end that
 *            holds the larger part of its hour, the whole hour from it
 *            minus the samples of the part outside the range:
 *            roll_complements) — when no copy of any
 *            id is left out in the range (see below) and the rollup counts
 *            exactly the profiles samples holds in those hours (so rows
 *            stored before the rollup existed, or a view insert that
 *            failed, fall back to the samples rather than a wrong answer).
 *            URL option rollup=0 never reads it (the tests compare both).
 *   rollup_version  the same per version too: ORDER BY (kind, bucket,
 *            rowtype, version, stack), its own view; merges filtered by
 *            versions only read their whole hours from it, on the same
 *            conditions.
 *   rollup_version_day  the same per DAY (bucket = its first ns): such
 *            merges read their range's whole days from it and only the
 *            other whole hours from rollup_version (one UNION ALL, one
 *            count; when the count differs, as for days stored before
 *            the table existed, they ask again with every hour from
 *            rollup_version).
 *   rollup_label  the same per label of the profile: ORDER BY (kind,
 *            bucket, rowtype, label_key, label_value, stack), its view
 *            ARRAY JOINs the labels every row carries (a profile's labels
 *            are on its sample rows too) and keeps only the keys of the
 *            URL option rollup_labels (has([...], label_key)); merges
 *            filtered by one label of those keys only read their whole
 *            hours from it, on the same conditions (a label of another key
 *            reads its series' samples). Its cost is the listed labels'
 *            cardinality: per hour one row per (label, stack), so a label
 *            with a value per instance holds about as many rows as the
 *            samples (bench/store_ch.sh prints its bytes per profile).
 *            With no key listed there is no view (no rows, no cost on
 *            insert). On open the view is created, or dropped and created
 *            again (18.16 cannot ALTER it) when its definition in
 *            system.tables lists other keys, or dropped with none listed.
 *            Hours stored under another list (or before the table existed:
 *            created on open in a database that lacks it) hold no rows, or
 *            rows of a part of their profiles, for a key: their counts
 *            differ and such merges read the samples.
 *   series   (day, kind, sid, version, label_keys, label_values, profiles)
 *            SummingMergeTree(profiles), PARTITION BY day, ORDER BY (kind,
 *            sid): per day the version and labels of every series id and
 *            its count of profile rows, filled by a view over the profile
 *            rows. A version or label filter is resolved here to the sids
 *            that match (a few rows per series and day; looked up before
 *            a merge's request and listed in it when few: ch_merge), when the table
 *            counts every profile row of the range's days (else, or with
 *            rollup=0, the exact way: profile rows chosen by id). On one
 *            server a store remembers the days it found complete with
 *            samples' row count of the day (system.parts) and counts
 *            them again only when that changed (days_trusted), and keeps
 *            a filter's look-up while it did not (one request then).
 *   rollup_series  the same per series id and DAY: ORDER BY (kind,
 *            bucket, rowtype, sid, stack); merges of labels the label
 *            rollup does not hold (an instance), of two labels, of a label
 *            and versions read their whole days from it (sid IN, as
 *            below), the rest from their series' samples (or a day minus
 *            its part outside: roll_complements by day). Per day: a series
 *            has few profiles an hour, whose hourly sums fold little.
 *   profiles (day, kind, sid, start_ns, duration_ns, pid, ins, v0..v3)
 *            MergeTree ORDER BY (kind, sid, start_ns), filled by a view
 *            over the profile rows: the totals (and duplicate probe) of a
 *            merge that selects series read their rows here, without
 *            string columns, when it counts every profile row of the
 *            range's days (else from the profile rows of samples).
 *   retention (before_ns) Log: the watermark (see ch_retain).
 * In a cluster, stacks, samples, the rollups, series and profiles are *_local
 * tables on every shard and Distributed tables of the same names shard
 * stacks by hash and samples by pid, so all the rows of a profile, and
 * every copy of one id, live on one shard (and its rollup and series rows
 * with them: each shard's views write its own *_local tables, and a
 * shard resolves sids from its own series_local).
 *
 * Idempotency (ClickHouse has no unique constraint). A put
 *   1. drops the batch's repeated ids and the ids already stored (looked up
 *      in the batch's days), counting them as duplicates;
 *   2. inserts the stacks it has not written for their days, then every row of its profiles in
 *      ONE INSERT (RowBinary, one block: max_insert_block_size is raised
 *      above any batch), on a fresh connection so libcurl never resends it.
 *      A block is written whole or not at all, and a profile's rows are
 *      never split between blocks, shards or days: a profile is stored
 *      entirely or not at all, even when a put fails half-way (a shard
 *      down), and the client's retry stores just the missing ones;
 *   3. returns 0 only after that INSERT answered 200 (with
 *      insert_distributed_sync=1 in a cluster: every shard has its rows).
 * Two serve instances racing with one id (a client retrying elsewhere
 * after a timeout) can both pass step 1. Each stored copy has its own
 * random 64-bit token, ins, on all its rows, and every query reads only
 * the copy with the smallest token per id: profile-level answers (and
 * merges by ids) with
 *   (start_ns, ins) IN (SELECT argMin(start_ns, ins), min(ins) ... GROUP BY id)
 * over the (few) profile rows; other merges with
 *   ins NOT IN (<the other copies' tokens>)
 * a set that is empty unless such a race happened (seen when a merge's
 * profile rows hold fewer distinct pids than rows, then found by a GROUP
 * BY of the integer pid, HAVING count() > 1: only ids stored twice are
 * then grouped by their string), so the common merge
 * reads the sample rows with no token test (a filtered merge with copies
 * among its profiles takes the exact way; the series listing asks the
 * same probe and leaves the losers out likewise). All these subqueries run on
 * each shard over its local table (an
 * id's copies are co-located), on one server or a cluster alike, without
 * ZooKeeper or Replicated tables.
 *
 * Queries: a merge is one GROUP BY stack over samples inside ClickHouse,
 * in one request with its totals, checks and the watermark (ch_merge);
 * series bucket the profile rows with intDiv in SQL, in one request with
 * the watermark and the merges' duplicate probe (ch_series; the copy per
 * id chosen by id only with rollup=0 or many copies); listings are
 * SELECT DISTINCT; all
 * answers come back as RowBinary. Retention drops whole day partitions
 * (ALTER TABLE ... DROP PARTITION ID) and hides the boundary day's older
 * profiles behind a watermark (the retention table, one per host, read by
 * every query) until their day is dropped: no mutation ever rewrites data.
 *
 * The SQL keeps to what ClickHouse 18.16 (Debian 12) and current versions
 * both accept: no LowCardinality, no toStartOfInterval, no query
 * parameters, no mutations_sync, no ON CLUSTER (needs ZooKeeper); see
 * docs/fleet.md.
 *
 * Errors: a failed connection, a timeout, or ClickHouse's own network and
 * timeout errors (a shard down) return HS_STORE_UNAVAILABLE; nothing is
 * cached, so when ClickHouse is back the next call works.
 */
#define _GNU_SOURCE /* asprintf */
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

/* ---- request bodies: base/bytes.h ---- */

/* A ClickHouse string literal: quotes and backslashes escaped, control
 * bytes as \xHH; other bytes (UTF-8) as they are. */
static void buf_quote(hs_bytes *b, const char *s)
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
static void rb_u64(hs_bytes *b, uint64_t v)
{
    unsigned char x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    hs_bytes_put(b, x, 8);
}
static void rb_i64(hs_bytes *b, int64_t v) { rb_u64(b, (uint64_t)v); }
static void rb_u16(hs_bytes *b, uint16_t v)
{
    unsigned char x[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    hs_bytes_put(b, x, 2);
}
static void rb_u8(hs_bytes *b, uint8_t v) { hs_bytes_put(b, &v, 1); }
static void rb_bytes(hs_bytes *b, const void *p, size_t n)
{
    hs_bytes_uv(b, n);
    hs_bytes_put(b, p, n);
}
static void rb_str(hs_bytes *b, const char *s) { rb_bytes(b, s ? s : "", s ? strlen(s) : 0); }

/* RowBinary reader over an answer; bad is set on a short or malformed
 * answer (and every later read returns 0). */
typedef struct {
    const unsigned char *p, *end;
    int bad;
} ch_rd;

static int rd_more(const ch_rd *r) { return !r->bad && r->p < r->end; }

static uint64_t rd_u64(ch_rd *r)
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
static int64_t rd_i64(ch_rd *r) { return (int64_t)rd_u64(r); }
static uint8_t rd_u8(ch_rd *r)
{
    if (r->bad || r->p >= r->end) {
        r->bad = 1;
        return 0;
    }
    return *r->p++;
}
static uint64_t rd_varint(ch_rd *r)
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
static const unsigned char *rd_bytes(ch_rd *r, size_t *len)
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
static char *rd_strdup(ch_rd *r)
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

static const hs_store_ops ch_ops;
static int kind_types(ch_store *s, const char *service, const char *type, const hs_store_types **out, char *err,
                      size_t errlen);
static int same_types(const hs_store_types *a, const hs_store_types *b);
static int run(ch_store *s, hs_bytes *q, hs_bytes *ans, char *err, size_t errlen);
static int malformed(char *err, size_t errlen, const char *what);

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static CURL *pool_get(ch_store *s)
{
    CURL *c = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->n_pool)
        c = s->pool[--s->n_pool];
    pthread_mutex_unlock(&s->mu);
    return c ? c : curl_easy_init();
}

static void pool_put(ch_store *s, CURL *c)
{
    pthread_mutex_lock(&s->mu);
    if (s->n_pool < CH_POOL) {
        s->pool[s->n_pool++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    if (c)
        curl_easy_cleanup(c);
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    hs_bytes *b = arg;
    size_t len = size * n;
    if (b->n + len > CH_MAX_RESPONSE)
        return 0; /* curl reports CURLE_WRITE_ERROR */
    hs_bytes_put(b, p, len);
    return b->oom ? 0 : len;
}

/* ClickHouse's error codes that mean "a server is down or slow", not
 * "the request is wrong": timeouts, network errors, a shard unreachable,
 * too many queries or parts. The client is told to retry (503). */
static int ch_code_unavailable(int code)
{
    switch (code) {
    case 159: /* TIMEOUT_EXCEEDED */
    case 160: /* TOO_SLOW */
    case 202: /* TOO_MANY_SIMULTANEOUS_QUERIES */
    case 209: /* SOCKET_TIMEOUT */
    case 210: /* NETWORK_ERROR */
    case 252: /* TOO_MANY_PARTS: inserts faster than merges, retry later */
    case 279: /* ALL_CONNECTION_TRIES_FAILED */
    case 285: /* TOO_FEW_LIVE_REPLICAS */
    case 394: /* QUERY_WAS_CANCELLED */
        return 1;
    default:
        return 0;
    }
}

/* The first line of ClickHouse's error answer, without its stack trace
 * and the e.what() repetition. */
static void ch_error_line(const hs_bytes *b, char *out, size_t outlen)
{
    const char *p = b->s ? b->s : "";
    size_t n = strcspn(p, "\n");
    const char *w = strstr(p, ", e.what() =");
    if (w && (size_t)(w - p) < n)
        n = (size_t)(w - p);
    while (n && isspace((unsigned char)p[n - 1]))
        n--;
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, p, n);
    out[n] = 0;
}

enum { CH_QUERY, CH_INSERT };

/* One HTTP request to host h. A query (kind CH_QUERY) is sent as the POST
 * body; an INSERT sends sql in the URL and body as its data. settings is
 * "" or "&name=value...". The answer goes to out (may be NULL). Returns 0,
 * -1, or HS_STORE_UNAVAILABLE; *connect_failed is set when the request
 * never reached the server (safe to send elsewhere). */
static int ch_http(ch_store *s, size_t h, int kind, const char *sql, const hs_bytes *body, const char *settings,
                   hs_bytes *out, int *connect_failed, char *err, size_t errlen)
{
    *connect_failed = 0;
    CURL *c = pool_get(s);
    if (!c) {
        set_err(err, errlen, "clickhouse: curl_easy_init failed");
        return -1;
    }
    hs_bytes url = {0}, resp = {0};
    char *esc = NULL;
    if (kind == CH_INSERT) {
        esc = curl_easy_escape(c, sql, 0);
        if (!esc) {
            pool_put(s, c);
            set_err(err, errlen, "clickhouse: out of memory");
            return -1;
        }
    }
    long secs = (s->timeout_ms + 999) / 1000;
    hs_bytes_printf(&url, "http://%s:%d/?max_execution_time=%ld&wait_end_of_query=1%s%s%s",
               s->hosts[h].host, s->hosts[h].port, secs, kind == CH_INSERT ? "&query=" : "",
               esc ? esc : "", settings);
    curl_free(esc);
    if (url.oom) {
        pool_put(s, c);
        free(url.p);
        set_err(err, errlen, "clickhouse: out of memory");
        return -1;
    }
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url.p);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, s->connect_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    const void *data = kind == CH_INSERT ? (const void *)body->p : (const void *)sql;
    size_t len = kind == CH_INSERT ? body->n : strlen(sql);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, data ? data : "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    if (hdr)
        hdr = curl_slist_append(hdr, "Expect:"); /* no 100-continue round trip */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    if (s->userpwd) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERPWD, s->userpwd);
    }
    if (kind == CH_INSERT) {
        /* Never let libcurl resend an INSERT on a reused connection that
         * died: the first one may have been stored. */
        curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    }
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    int rc = 0;
    if (cc != CURLE_OK) {
        *connect_failed = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST;
        if (cc == CURLE_WRITE_ERROR)
            set_err(err, errlen, "clickhouse %s:%d: answer too large or out of memory", s->hosts[h].host,
                    s->hosts[h].port);
        else
            set_err(err, errlen, "clickhouse %s:%d unavailable: %s", s->hosts[h].host, s->hosts[h].port,
                    curl_easy_strerror(cc));
        rc = cc == CURLE_WRITE_ERROR ? -1 : HS_STORE_UNAVAILABLE;
        /* A handle whose transfer failed half-way is not worth keeping. */
        curl_easy_cleanup(c);
        c = NULL;
    } else if (status != 200) {
        char line[400];
        ch_error_line(&resp, line, sizeof line);
        int code = 0;
        if (sscanf(line, "Code: %d", &code) != 1)
            code = 0;
        rc = status == 503 || ch_code_unavailable(code) ? HS_STORE_UNAVAILABLE : -1;
        set_err(err, errlen, "clickhouse %s:%d%s: HTTP %ld: %s", s->hosts[h].host, s->hosts[h].port,
                rc == HS_STORE_UNAVAILABLE ? " unavailable (it, or a shard it needs, is down or slow)" : "", status,
                line[0] ? line : "(no message)");
    }
    if (c)
        pool_put(s, c);
    free(url.p);
    if (rc == 0 && out) {
        *out = resp;
        if (!out->p) {
            out->p = malloc(1);
            if (!out->p) {
                set_err(err, errlen, "clickhouse: out of memory");
                return -1;
            }
            out->p[0] = 0;
        }
    } else {
        free(resp.p);
    }
    return rc;
}

/* A request to any host: the one that answered last first, then the
 * others when it cannot be reached at all. */
static int ch_any(ch_store *s, int kind, const char *sql, const hs_bytes *body, const char *settings, hs_bytes *out,
                  char *err, size_t errlen)
{
    pthread_mutex_lock(&s->mu);
    size_t first = s->next_host;
    pthread_mutex_unlock(&s->mu);
    int rc = -1;
    for (size_t i = 0; i < s->n_hosts; i++) {
        size_t h = (first + i) % s->n_hosts;
        int cf;
        rc = ch_http(s, h, kind, sql, body, settings, out, &cf, err, errlen);
        if (rc == 0 && h != first) {
            pthread_mutex_lock(&s->mu);
            s->next_host = h;
            pthread_mutex_unlock(&s->mu);
        }
        if (!cf)
            break;
    }
    return rc;
}

static int ch_query(ch_store *s, const char *sql, hs_bytes *out, char *err, size_t errlen)
{
    return ch_any(s, CH_QUERY, sql, NULL, "", out, err, errlen);
}

/* Run sql on every host (DDL, retention), stopping at the first error. */
static int ch_each(ch_store *s, const char *sql, char *err, size_t errlen)
{
    for (size_t h = 0; h < s->n_hosts; h++) {
        int cf;
        int rc = ch_http(s, h, CH_QUERY, sql, NULL, "", NULL, &cf, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- schema ---- */

/* The DDL of a rollup NAME keyed by (kind, bucket, rowtype, [cols,] stack)
 * (cols: "" or columns of samples, or of its ARRAY JOIN aj; defs: their
 * declarations; opts: "" or its SETTINGS) and of its materialized view
 * NAME_mv over the rows of samples that meet cond (*tbl, *mv: malloc'd,
 * or NULL on out of memory). */
static void rollup_ddl(char **tbl, char **mv, const char *db, const char *L, const char *name, long long unit,
                       const char *cols, const char *defs, const char *opts, const char *aj, const char *cond)
{
    const char *sep = *cols ? ", " : "";
    int a = asprintf(tbl,
                     "CREATE TABLE IF NOT EXISTS %s.%s%s (day Date, kind UInt64, bucket Int64, rowtype UInt8%s%s, "
                     "stack UInt64, profiles UInt64, v0 Int64, v1 Int64, v2 Int64, v3 Int64) "
                     "ENGINE = SummingMergeTree() PARTITION BY day ORDER BY (kind, bucket, rowtype%s%s, stack)%s",
                     db, name, L, sep, defs, sep, cols, opts);
    if (a < 0)
        *tbl = NULL;
    int b = asprintf(mv,
                     "CREATE MATERIALIZED VIEW IF NOT EXISTS %s.%s_mv%s TO %s.%s%s AS SELECT day, kind, "
                     "intDiv(start_ns, %lld) * %lld AS bucket, rowtype%s%s, stack, count() AS profiles, "
                     "sum(v0) AS v0, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM %s.samples%s%s "
                     "WHERE start_ns >= 0%s GROUP BY day, kind, bucket, rowtype%s%s, stack",
                     db, name, L, db, name, L, unit, unit, sep, cols, db, L, aj, cond, sep, cols);
    if (b < 0)
        *mv = NULL;
}

/* 0 if every host's samples table has this version's layout (the series
 * id, the key it leads); -1 with a message for a database an older
 * hotspur created, whose rows have neither: its answers would be wrong. */
static int schema_current(ch_store *s, char *err, size_t errlen)
{
    hs_bytes q = {0};
    hs_bytes_str(&q, "SELECT count() FROM system.columns WHERE database = ");
    buf_quote(&q, s->db);
    hs_bytes_printf(&q, " AND table = 'samples%s' AND name = 'sid' FORMAT RowBinary", s->local);
    if (q.oom) {
        set_err(err, errlen, "clickhouse: out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t h = 0; h < s->n_hosts && rc == 0; h++) {
        hs_bytes ans = {0};
        int cf;
        rc = ch_http(s, h, CH_QUERY, q.s, NULL, "", &ans, &cf, err, errlen);
        if (rc)
            break;
        ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
        uint64_t n = rd_u64(&r);
        free(ans.p);
        if (r.bad) {
            rc = malformed(err, errlen, "schema");
        } else if (n != 1) {
            set_err(err, errlen,
                    "clickhouse %s:%d: database %s was created by an older hotspur (its samples table has no "
                    "series id): give this version a new database (docs/fleet.md, \"An existing database\")",
                    s->hosts[h].host, s->hosts[h].port, s->db);
            rc = -1;
        }
    }
    free(q.p);
    return rc;
}

/* Host h's view of the label rollup as rollup_labels lists (create: its
 * DDL; keys: the condition on the key its definition holds): none with no
 * key, else created, or replaced when its definition has another list
 * (18.16 cannot ALTER a materialized view: DROP and CREATE). While the
 * view is missing or of another list its hours' counts of profiles differ
 * from the samples', so merges of one label read the samples there. */
static int label_view(ch_store *s, size_t h, const char *create, const char *keys, char *err, size_t errlen)
{
    hs_bytes q = {0}, ans = {0}, drop = {0};
    hs_bytes_str(&q, "SELECT count(), countIf(position(create_table_query, ");
    buf_quote(&q, keys);
    hs_bytes_str(&q, ") > 0) FROM system.tables WHERE database = ");
    buf_quote(&q, s->db);
    hs_bytes_printf(&q, " AND name = 'rollup_label_mv%s' FORMAT RowBinary", s->local);
    hs_bytes_printf(&drop, "DROP TABLE IF EXISTS %s.rollup_label_mv%s", s->db, s->local);
    int cf, rc = -1;
    if (q.oom || drop.oom) {
        set_err(err, errlen, "clickhouse: out of memory");
        goto out;
    }
    rc = ch_http(s, h, CH_QUERY, q.s, NULL, "", &ans, &cf, err, errlen);
    if (rc)
        goto out;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    uint64_t exists = rd_u64(&r), same = rd_u64(&r);
    if (r.bad) {
        rc = malformed(err, errlen, "label rollup view");
        goto out;
    }
    if (exists && (!s->n_roll_keys || !same))
        rc = ch_http(s, h, CH_QUERY, drop.s, NULL, "", NULL, &cf, err, errlen);
    if (rc == 0 && s->n_roll_keys && (!exists || !same))
        rc = ch_http(s, h, CH_QUERY, create, NULL, "", NULL, &cf, err, errlen);
out:
    free(q.p);
    free(ans.p);
    free(drop.p);
    return rc;
}

static int ch_schema(ch_store *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->mu);
    int ok = s->schema_ok;
    pthread_mutex_unlock(&s->mu);
    if (ok)
        return 0;
    const char *L = s->local, *db = s->db;
    int rc = 0;
    enum { N_DDL = 18, N_BASE = 4 /* created before the schema check */ };
    const char *ddl[N_DDL];
    char *owned[N_DDL] = {0};
    int ok_ddl[N_DDL];
    ok_ddl[0] = asprintf(&owned[0], "CREATE DATABASE IF NOT EXISTS %s", db);
    ok_ddl[1] = asprintf(&owned[1],
                         "CREATE TABLE IF NOT EXISTS %s.stacks%s (day Date, hash UInt64, record String) "
                         "ENGINE = ReplacingMergeTree() PARTITION BY day ORDER BY hash",
                         db, L);
    ok_ddl[2] = asprintf(&owned[2],
                         "CREATE TABLE IF NOT EXISTS %s.samples%s (day Date, rowtype UInt8, kind UInt64, "
                         "start_ns Int64, ins UInt64, stack UInt64, v0 Int64, v1 Int64, v2 Int64, v3 Int64, "
                         "pid UInt64, id String, service String, type String, version String, "
                         "label_keys Array(String), label_values Array(String), duration_ns Int64, "
                         "sample_types Array(String), sample_units Array(String), default_index UInt8, "
                         "period_type String, period_unit String, period Int64, sid UInt64) "
                         "ENGINE = MergeTree() PARTITION BY day ORDER BY (rowtype, kind, %s, sid, start_ns, "
                         "ins, stack) SETTINGS index_granularity = 1024",
                         db, L, CH_HOUR_KEY);
    /* Not distributed: every host keeps its own copy of the watermark. */
    ok_ddl[3] = asprintf(&owned[3], "CREATE TABLE IF NOT EXISTS %s.retention (before_ns Int64) ENGINE = Log", db);
    /* The rollup: per (kind, hour, row type, stack) sums of the sample
     * rows, and per (kind, hour) the profile rows' count and totals;
     * filled by ClickHouse from every block inserted into samples (on
     * each shard, from its local table), folded within the block. The
     * version rollup: the same per version as well (the sample rows carry
     * their profile's version), for merges of some versions. */
    rollup_ddl(&owned[4], &owned[5], db, L, "rollup", CH_BUCKET_NS, "", "", "", "", "");
    rollup_ddl(&owned[6], &owned[7], db, L, "rollup_version", CH_BUCKET_NS, "version", "version String", "", "", "");
    /* The label rollup: the same per label (key, value) of the profile
     * (every row carries its profile's labels), for merges of one label.
     * It counts only the profile rows marked as having labelled sample
     * rows (CH_LABELLED): a profile an older hotspur stores (a rolling
     * upgrade) has labels on its profile row only, so the view would sum
     * none of its samples, and counting it would hide that. Granules of
     * 1024 rows, as the samples': a label of many values (an instance)
     * has ~1500 rows per value and hour. */
    /* Only the keys of rollup_labels (has([...], label_key): the text
     * label_view finds in the view's definition). */
    hs_bytes keys = {0}, cond = {0};
    hs_bytes_str(&keys, "has([");
    for (size_t i = 0; i < s->n_roll_keys; i++) {
        hs_bytes_str(&keys, i ? ", " : "");
        buf_quote(&keys, s->roll_keys[i]);
    }
    hs_bytes_str(&keys, "], label_key)");
    hs_bytes_printf(&cond, " AND (rowtype = 1 OR stack = " CH_STR(CH_LABELLED) ") AND %s", keys.s ? keys.s : "");
    rollup_ddl(&owned[10], &owned[11], db, L, "rollup_label", CH_BUCKET_NS, "label_key, label_value",
               "label_key String, label_value String", " SETTINGS index_granularity = 1024",
               " ARRAY JOIN label_keys AS label_key, label_values AS label_value", cond.s ? cond.s : "");
    ok_ddl[4] = ok_ddl[5] = ok_ddl[6] = ok_ddl[7] = ok_ddl[10] = ok_ddl[11] = 0; /* (NULL if out of memory) */
    if (keys.oom || cond.oom) {
        free(owned[10]);
        free(owned[11]);
        owned[10] = owned[11] = NULL;
    }
    /* The series of each day and kind: sid -> version and labels, and
     * how many profile rows it has (to tell that it misses none). */
    ok_ddl[8] = asprintf(&owned[8],
                         "CREATE TABLE IF NOT EXISTS %s.series%s (day Date, kind UInt64, sid UInt64, "
                         "version String, label_keys Array(String), label_values Array(String), profiles UInt64) "
                         "ENGINE = SummingMergeTree((profiles)) PARTITION BY day ORDER BY (kind, sid)",
                         db, L);
    ok_ddl[9] = asprintf(&owned[9],
                         "CREATE MATERIALIZED VIEW IF NOT EXISTS %s.series_mv%s TO %s.series%s AS SELECT day, "
                         "kind, sid, any(version) AS version, any(label_keys) AS label_keys, "
                         "any(label_values) AS label_values, count() AS profiles FROM %s.samples%s "
                         "WHERE rowtype = 0 GROUP BY day, kind, sid",
                         db, L, db, L, db, L);
    /* The series rollup: the same per series id and DAY (a series has
     * ~6 profiles an hour in bench/store_ch.sh, too few for hourly sums
     * to fold much), for merges of labels the label rollup does not
     * hold. Granules of 1024 rows: a series has a few thousand rows a
     * day. */
    rollup_ddl(&owned[12], &owned[13], db, L, "rollup_series", CH_DAY_NS, "sid", "sid UInt64",
               " SETTINGS index_granularity = 1024", "", "");
    /* The version rollup per day too: a merge of versions reads its
     * range's whole days there (~1/24 of the rows of their hours). */
    rollup_ddl(&owned[16], &owned[17], db, L, "rollup_version_day", CH_DAY_NS, "version", "version String", "", "",
               "");
    ok_ddl[12] = ok_ddl[13] = ok_ddl[16] = ok_ddl[17] = 0;
    /* The profiles: the numbers of every profile row (no string), ordered
     * by series, for the totals of merges that select series. */
    ok_ddl[14] = asprintf(&owned[14],
                          "CREATE TABLE IF NOT EXISTS %s.profiles%s (day Date, kind UInt64, sid UInt64, "
                          "start_ns Int64, duration_ns Int64, pid UInt64, ins UInt64, v0 Int64, v1 Int64, v2 Int64, "
                          "v3 Int64) ENGINE = MergeTree() PARTITION BY day ORDER BY (kind, sid, start_ns) "
                          "SETTINGS index_granularity = 1024",
                          db, L);
    ok_ddl[15] = asprintf(&owned[15],
                          "CREATE MATERIALIZED VIEW IF NOT EXISTS %s.profiles_mv%s TO %s.profiles%s AS SELECT day, "
                          "kind, sid, start_ns, duration_ns, pid, ins, v0, v1, v2, v3 FROM %s.samples%s "
                          "WHERE rowtype = 0",
                          db, L, db, L, db, L);
    for (int i = 0; i < N_DDL; i++) {
        if (ok_ddl[i] < 0)
            owned[i] = NULL; /* (asprintf leaves it undefined) */
        ddl[i] = owned[i];
        if (!ddl[i]) {
            set_err(err, errlen, "clickhouse: out of memory");
            rc = -1;
            goto out;
        }
    }
    for (int i = 0; i < N_BASE && rc == 0; i++)
        rc = ch_each(s, ddl[i], err, errlen);
    if (rc == 0)
        rc = schema_current(s, err, errlen);
    for (int i = N_BASE; i < N_DDL && rc == 0; i++)
        if (i != 11) /* (the label rollup's view: label_view) */
            rc = ch_each(s, ddl[i], err, errlen);
    for (size_t h = 0; h < s->n_hosts && rc == 0; h++)
        rc = label_view(s, h, ddl[11], keys.s, err, errlen);
    if (rc == 0 && s->cluster) {
        /* (the rollups and series are only read through their Distributed
         * tables: the materialized views write each shard's own.) */
        static const char *const tables[9] = {"stacks",   "samples",           "rollup",       "rollup_version",
                                              "rollup_label", "series", "rollup_series", "profiles",
                                              "rollup_version_day"};
        static const char *const keys[9] = {", hash", ", pid", "", "", "", "", "", "", ""};
        for (int i = 0; i < 9 && rc == 0; i++) {
            hs_bytes d = {0};
            hs_bytes_printf(&d, "CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s_local ENGINE = Distributed(%s, %s, %s_local%s)",
                       db, tables[i], db, tables[i], s->cluster, db, tables[i], keys[i]);
            if (d.oom) {
                set_err(err, errlen, "clickhouse: out of memory");
                rc = -1;
            } else {
                rc = ch_each(s, d.s, err, errlen);
            }
            free(d.p);
        }
    }
    if (rc == 0) {
        pthread_mutex_lock(&s->mu);
        s->schema_ok = 1;
        pthread_mutex_unlock(&s->mu);
    } else {
        size_t n = strlen(err);
        if (n + 1 < errlen)
            snprintf(err + n, errlen - n, " (creating the schema)");
    }
out:
    for (int i = 0; i < N_DDL; i++)
        free(owned[i]);
    free(keys.p);
    free(cond.p);
    return rc;
}

/* ---- URL ---- */

static int valid_ident(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return 0;
    return 1;
}

/* timeout=, connect_timeout=: a duration (units.h; bare seconds), 1 ms..1 d. */
static int parse_seconds(const char *v, long *ms)
{
    int64_t ns;
    if (hs_parse_duration_ns(v, &ns) < 0 || ns <= 0 || ns > 86400 * 1000000000LL)
        return -1;
    *ms = (long)((ns + 500000) / 1000000);
    if (*ms < 1)
        *ms = 1;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* rollup_labels=KEY[,KEY...] (or empty: none): the label keys the label
 * rollup holds, sorted (the view's definition names them in that order,
 * so one list always gives one definition). */
static int parse_keys(ch_store *s, const char *url, const char *v, char *err, size_t errlen)
{
    for (size_t i = 0; i < s->n_roll_keys; i++)
        free(s->roll_keys[i]);
    free(s->roll_keys);
    s->roll_keys = NULL;
    s->n_roll_keys = 0;
    if (!*v)
        return 0;
    size_t n = 1;
    for (const char *c = v; *c; c++) {
        n += *c == ',';
        if (!isalnum((unsigned char)*c) && !strchr("_.-/:,", *c)) {
            set_err(err, errlen, "clickhouse URL '%s': rollup_labels must be label keys of [A-Za-z0-9_.:/-] "
                    "separated by commas", url);
            return -1;
        }
    }
    if (n > CH_MAX_ROLL_KEYS) {
        set_err(err, errlen, "clickhouse URL '%s': rollup_labels lists more than %d keys", url, CH_MAX_ROLL_KEYS);
        return -1;
    }
    if (!(s->roll_keys = calloc(n, sizeof *s->roll_keys))) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    for (const char *c = v;; c++) {
        const char *e = strchr(c, ',');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (!len) {
            set_err(err, errlen, "clickhouse URL '%s': rollup_labels has an empty key", url);
            return -1;
        }
        if (!(s->roll_keys[s->n_roll_keys] = strndup(c, len))) {
            set_err(err, errlen, "out of memory");
            return -1;
        }
        s->n_roll_keys++;
        if (!e)
            break;
        c = e;
    }
    qsort(s->roll_keys, s->n_roll_keys, sizeof *s->roll_keys, cmp_str);
    for (size_t i = 1; i < s->n_roll_keys; i++)
        if (strcmp(s->roll_keys[i - 1], s->roll_keys[i]) == 0) {
            set_err(err, errlen, "clickhouse URL '%s': rollup_labels lists '%s' twice", url, s->roll_keys[i]);
            return -1;
        }
    return 0;
}

static int parse_url(ch_store *s, const char *url, char *err, size_t errlen)
{
    const char *p = url + strlen("clickhouse://");
    const char *slash = strchr(p, '/');
    if (!slash) {
        set_err(err, errlen, "clickhouse URL '%s' needs a database: clickhouse://HOST:PORT/DB", url);
        return -1;
    }
    char *auth = strndup(p, (size_t)(slash - p));
    if (!auth) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    char *hosts = auth, *at = strrchr(auth, '@');
    if (at) {
        *at = 0;
        hosts = at + 1;
        s->userpwd = strdup(auth);
        if (!s->userpwd) {
            free(auth);
            set_err(err, errlen, "out of memory");
            return -1;
        }
    }
    int rc = 0;
    for (char *save = NULL, *tok = strtok_r(hosts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(tok, ':');
        long port = 8123;
        if (colon) {
            char *end;
            errno = 0;
            port = strtol(colon + 1, &end, 10);
            if (errno || end == colon + 1 || *end || port < 1 || port > 65535) {
                set_err(err, errlen, "clickhouse URL '%s': bad port in '%s'", url, tok);
                rc = -1;
                break;
            }
            *colon = 0;
        }
        if (!*tok) {
            set_err(err, errlen, "clickhouse URL '%s': empty host", url);
            rc = -1;
            break;
        }
        ch_host *nh = realloc(s->hosts, (s->n_hosts + 1) * sizeof *nh);
        if (!nh || !(nh[s->n_hosts].host = strdup(tok))) {
            if (nh)
                s->hosts = nh;
            set_err(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        s->hosts = nh;
        s->hosts[s->n_hosts++].port = (int)port;
    }
    free(auth);
    if (rc)
        return rc;
    if (!s->n_hosts) {
        set_err(err, errlen, "clickhouse URL '%s' has no host", url);
        return -1;
    }
    const char *q = strchr(slash, '?');
    size_t dblen = q ? (size_t)(q - slash - 1) : strlen(slash + 1);
    s->db = strndup(slash + 1, dblen);
    if (!s->db) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    if (!valid_ident(s->db)) {
        set_err(err, errlen, "clickhouse URL '%s': the database name must be [A-Za-z0-9_]+", url);
        return -1;
    }
    if (!q)
        return 0;
    char *opts = strdup(q + 1);
    if (!opts) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    for (char *save = NULL, *kv = strtok_r(opts, "&", &save); kv && rc == 0; kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            set_err(err, errlen, "clickhouse URL '%s': option '%s' needs a value", url, kv);
            rc = -1;
            break;
        }
        *eq = 0;
        const char *v = eq + 1;
        if (strcmp(kv, "cluster") == 0) {
            if (!valid_ident(v)) {
                set_err(err, errlen, "clickhouse URL '%s': the cluster name must be [A-Za-z0-9_]+", url);
                rc = -1;
            } else {
                free(s->cluster);
                if (!(s->cluster = strdup(v))) {
                    set_err(err, errlen, "out of memory");
                    rc = -1;
                }
            }
        } else if (strcmp(kv, "rollup") == 0) {
            if (strcmp(v, "0") && strcmp(v, "1")) {
                set_err(err, errlen, "clickhouse URL '%s': rollup must be 0 or 1", url);
                rc = -1;
            } else {
                s->rollup = v[0] == '1';
            }
        } else if (strcmp(kv, "label_rollup_min") == 0) {
            char *end;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (!*v || *end || errno || n < 0 || n > 1000000000) {
                set_err(err, errlen, "clickhouse URL '%s': label_rollup_min must be a count in [0, 1000000000]", url);
                rc = -1;
            } else {
                s->label_roll_min = n;
            }
        } else if (strcmp(kv, "rollup_labels") == 0) {
            rc = parse_keys(s, url, v, err, errlen);
        } else if (strcmp(kv, "timeout") == 0) {
            if (parse_seconds(v, &s->timeout_ms)) {
                set_err(err, errlen, "clickhouse URL '%s': timeout must be seconds in (0, 86400]", url);
                rc = -1;
            }
        } else if (strcmp(kv, "connect_timeout") == 0) {
            if (parse_seconds(v, &s->connect_ms)) {
                set_err(err, errlen, "clickhouse URL '%s': connect_timeout must be seconds in (0, 86400]", url);
                rc = -1;
            }
        } else {
            set_err(err, errlen, "clickhouse URL '%s': unknown option '%s' (cluster, timeout, "
                    "connect_timeout, rollup, rollup_labels, label_rollup_min)",
                    url, kv);
            rc = -1;
        }
    }
    free(opts);
    return rc;
}

static void ch_close(hs_store *base)
{
    ch_store *s = (ch_store *)base;
    for (size_t i = 0; i < s->n_pool; i++)
        curl_easy_cleanup(s->pool[i]);
    for (size_t i = 0; i < s->n_hosts; i++)
        free(s->hosts[i].host);
    while (s->types) {
        ch_types_entry *e = s->types;
        s->types = e->next;
        free(e->service);
        free(e->type);
        free(e->strings);
        free(e);
    }
    hs_idmap_free(&s->known);
    free(s->hosts);
    free(s->db);
    free(s->cluster);
    free(s->userpwd);
    for (size_t i = 0; i < s->n_roll_keys; i++)
        free(s->roll_keys[i]);
    free(s->roll_keys);
    for (size_t i = 0; i < CH_LOOKUPS; i++) {
        free(s->lookups[i].sql);
        free(s->lookups[i].sids);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
    curl_global_cleanup();
}

hs_store *hs_store_clickhouse_open(const char *url, char *err, size_t errlen)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        set_err(err, errlen, "clickhouse: curl_global_init failed");
        return NULL;
    }
    ch_store *s = calloc(1, sizeof *s);
    if (!s) {
        curl_global_cleanup();
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    s->base.ops = &ch_ops;
    s->connect_ms = 2000;
    s->timeout_ms = 30000;
    s->rollup = 1;
    s->label_roll_min = CH_LABEL_ROLL_MIN;
    if (pthread_mutex_init(&s->mu, NULL)) {
        free(s);
        curl_global_cleanup();
        set_err(err, errlen, "pthread_mutex_init failed");
        return NULL;
    }
    if (hs_idmap_init(&s->known, 4096) < 0) {
        set_err(err, errlen, "out of memory");
        ch_close(&s->base);
        return NULL;
    }
    if (parse_url(s, url, err, errlen)) {
        ch_close(&s->base);
        return NULL;
    }
    if (s->n_hosts > 1 && !s->cluster) {
        set_err(err, errlen, "clickhouse URL '%s': several hosts are the shards of a cluster: add ?cluster=NAME", url);
        ch_close(&s->base);
        return NULL;
    }
    s->local = s->cluster ? "_local" : "";
    /* The schema now if ClickHouse answers; if it is down, open anyway and
     * create it on the first call that reaches it. Other errors (a bad
     * cluster name, no permission) are the caller's to fix: fail. */
    int rc = ch_schema(s, err, errlen);
    if (rc == -1) {
        ch_close(&s->base);
        return NULL;
    }
    if (err && errlen)
        err[0] = 0;
    return &s->base;
}

/* ---- put ---- */

static uint16_t day_of(int64_t ns)
{
    int64_t d = ns >= 0 ? ns / CH_DAY_NS : 0;
    return d > 65535 ? 65535 : (uint16_t)d;
}

/* toDate('YYYY-MM-DD') of a day number. */
static void buf_day(hs_bytes *b, uint16_t day)
{
    time_t t = (time_t)day * 86400;
    struct tm tm;
    gmtime_r(&t, &tm);
    hs_bytes_printf(b, "toDate('%04d-%02d-%02d')", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

typedef struct {
    const hs_store_profile *p;
    size_t i;
} ch_ord;

static int cmp_id(const void *a, const void *b)
{
    const ch_ord *x = a, *y = b;
    int c = strcmp(x->p->id, y->p->id);
    return c ? c : x->i < y->i ? -1 : x->i > y->i; /* the first of a repeated id is stored */
}

typedef struct {
    uint16_t day;
    uint64_t hash;
    const hs_store_stack *st;
} ch_daystack;

static int cmp_daystack(const void *a, const void *b)
{
    const ch_daystack *x = a, *y = b;
    if (x->day != y->day)
        return x->day < y->day ? -1 : 1;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static int random_tokens(uint64_t *v, size_t n, char *err, size_t errlen)
{
    size_t need = n * sizeof *v, got = 0;
    while (got < need) {
        ssize_t r = getrandom((char *)v + got, need - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            set_err(err, errlen, "getrandom: %s", strerror(errno));
            return -1;
        }
        got += (size_t)r;
    }
    for (size_t i = 0; i < n; i++)
        if (!v[i])
            v[i] = 1;
    return 0;
}

static const char *insert_settings(const ch_store *s)
{
    return s->cluster ? "&insert_distributed_sync=1" : "";
}

static int ch_insert(ch_store *s, const char *table, const hs_bytes *rows, char *err, size_t errlen)
{
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO %s.%s FORMAT RowBinary", s->db, table);
    hs_bytes set = {0};
    hs_bytes_printf(&set, "%s&insert_distributed_timeout=%ld&max_insert_block_size=%d", insert_settings(s),
               (s->timeout_ms + 999) / 1000, CH_MAX_BLOCK + 1);
    if (set.oom) {
        set_err(err, errlen, "clickhouse: out of memory");
        return -1;
    }
    int rc = ch_any(s, CH_INSERT, sql, rows, set.s, NULL, err, errlen);
    free(set.p);
    return rc;
}

/* The kind of (service, type): what the samples' key starts with. Only
 * ever a filter that narrows the reading; the exact service and type are
 * checked on the profile rows. */
static uint64_t kind_of(const char *service, const char *type)
{
    size_t ls = strlen(service), lt = strlen(type);
    char small[512], *buf = ls + lt + 1 <= sizeof small ? small : malloc(ls + lt + 1);
    if (!buf)
        return 0; /* out of memory: a kind nothing has, the query finds nothing */
    memcpy(buf, service, ls);
    buf[ls] = 0;
    memcpy(buf + ls + 1, type, lt);
    uint64_t k = hs_stack_hash(buf, ls + lt + 1);
    if (buf != small)
        free(buf);
    return k;
}

/* The (day, hash) pairs this process has seen stored. */
static int cache_has(ch_store *s, uint16_t day, uint64_t hash)
{
    size_t slot = (size_t)-1;
    uint32_t v;
    while ((v = hs_idmap_next(&s->known, hash, &slot)) != UINT32_MAX)
        if (v == day)
            return 1;
    return 0;
}

/* Keep the stacks of a put that ClickHouse accepted; forget everything
 * when the cache is full (it only saves lookups). */
static void cache_add(ch_store *s, const ch_daystack *ds, size_t n)
{
    pthread_mutex_lock(&s->mu);
    if (s->known.n + n > CH_CACHE_MAX) {
        hs_idmap_free(&s->known);
        if (hs_idmap_init(&s->known, 4096) < 0)
            s->known.cap = 0;
    }
    for (size_t i = 0; i < n && s->known.cap; i++)
        if (!cache_has(s, ds[i].day, ds[i].hash) && hs_idmap_put(&s->known, ds[i].hash, ds[i].day) < 0)
            break;
    pthread_mutex_unlock(&s->mu);
}

/* " IN (toDate(..), ...)" of the distinct days of profiles ps. */
static void buf_days_in(hs_bytes *b, const hs_store_profile **ps, size_t n)
{
    uint16_t days[64];
    size_t nd = 0;
    hs_bytes_str(b, " IN (");
    for (size_t i = 0; i < n; i++) {
        uint16_t d = day_of(ps[i]->start_ns);
        size_t j, known = nd < sizeof days / sizeof *days ? nd : sizeof days / sizeof *days;
        for (j = 0; j < known && days[j] != d; j++)
            ;
        if (j < known)
            continue; /* (past 64 days a day may repeat: harmless) */
        if (nd < sizeof days / sizeof *days)
            days[nd] = d;
        if (nd++)
            hs_bytes_str(b, ",");
        buf_day(b, d);
    }
    hs_bytes_str(b, ")");
}

/* The stacks of the new profiles that this process has not stored for
 * their days, written to rows (RowBinary for the stacks table); *added and
 * *n_added list them for the cache once the insert is accepted. Not looked
 * up first: a record another process (or an earlier run) stored is simply
 * written again (one more row per process and day, which the
 * ReplacingMergeTree folds and every read groups by hash) — cheaper than
 * a query per put. */
static int stacks_to_insert(ch_store *s, const hs_store_profile **ps, const char *dup, size_t n, hs_bytes *rows,
                            ch_daystack **added, size_t *n_added, char *err, size_t errlen)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (!dup[i])
            total += ps[i]->n_stacks;
    ch_daystack *ds = malloc((total ? total : 1) * sizeof *ds);
    if (!ds) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    size_t m = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        if (dup[i])
            continue;
        uint16_t day = day_of(ps[i]->start_ns);
        for (size_t k = 0; k < ps[i]->n_stacks; k++)
            if (!cache_has(s, day, ps[i]->stacks[k].hash))
                ds[m++] = (ch_daystack){day, ps[i]->stacks[k].hash, &ps[i]->stacks[k]};
    }
    pthread_mutex_unlock(&s->mu);
    qsort(ds, m, sizeof *ds, cmp_daystack);
    size_t u = 0;
    for (size_t k = 0; k < m; k++)
        if (!u || ds[k].day != ds[u - 1].day || ds[k].hash != ds[u - 1].hash)
            ds[u++] = ds[k];
    m = u;
    for (size_t k = 0; k < m; k++) {
        rb_u16(rows, ds[k].day);
        rb_u64(rows, ds[k].hash);
        rb_bytes(rows, ds[k].st->data, ds[k].st->len);
    }
    *added = ds;
    *n_added = m;
    return 0;
}

/* The series id of p: the XXH3 hash of its version and labels
 * (version NUL key NUL value NUL ...), on every row of the profile. */
static uint64_t sid_of(const hs_store_profile *p)
{
    hs_bytes b = {0};
    hs_bytes_put(&b, p->version ? p->version : "", p->version ? strlen(p->version) + 1 : 1);
    for (size_t i = 0; i < p->n_labels; i++) {
        hs_bytes_put(&b, p->labels[i].key, strlen(p->labels[i].key) + 1);
        hs_bytes_put(&b, p->labels[i].value, strlen(p->labels[i].value) + 1);
    }
    /* (out of memory: 0, a series shared with others; a filtered merge
     * still reads the profile's exact version and labels) */
    uint64_t h = b.oom ? 0 : hs_stack_hash(b.p, b.n);
    free(b.p);
    return h;
}

/* The rows of profile p (token ins) for the samples table. */
static void profile_rows(hs_bytes *b, const hs_store_profile *p, uint64_t ins)
{
    uint16_t day = day_of(p->start_ns);
    uint64_t kind = kind_of(p->service, p->type), pid = hs_stack_hash(p->id, strlen(p->id)), sid = sid_of(p);
    for (size_t k = 0; k <= p->n_samples; k++) {
        int row = k > 0;
        const hs_store_sample *sm = row ? &p->samples[k - 1] : NULL;
        rb_u16(b, day);
        rb_u8(b, (uint8_t)row);
        rb_u64(b, kind);
        rb_i64(b, p->start_ns);
        rb_u64(b, ins);
        rb_u64(b, row ? sm->stack : CH_LABELLED);
        for (int v = 0; v < HS_STORE_MAX_VALUES; v++)
            rb_i64(b, (size_t)v >= p->types.n ? 0 : row ? sm->values[v] : p->totals[v]);
        rb_u64(b, pid);
        /* The profile's own columns: on its row 0 only. */
        rb_str(b, row ? "" : p->id);
        rb_str(b, row ? "" : p->service);
        rb_str(b, row ? "" : p->type);
        rb_str(b, p->version); /* on every row: the version rollup keys it */
        /* (the labels on every row: the label rollup keys them) */
        size_t nl = p->n_labels, nt = row ? 0 : p->types.n;
        hs_bytes_uv(b, nl);
        for (size_t i = 0; i < nl; i++)
            rb_str(b, p->labels[i].key);
        hs_bytes_uv(b, nl);
        for (size_t i = 0; i < nl; i++)
            rb_str(b, p->labels[i].value);
        rb_i64(b, row ? 0 : p->duration_ns);
        hs_bytes_uv(b, nt);
        for (size_t i = 0; i < nt; i++)
            rb_str(b, p->types.type[i]);
        hs_bytes_uv(b, nt);
        for (size_t i = 0; i < nt; i++)
            rb_str(b, p->types.unit[i]);
        rb_u8(b, row ? 0 : (uint8_t)p->types.default_index);
        rb_str(b, row ? "" : p->types.period_type);
        rb_str(b, row ? "" : p->types.period_unit);
        rb_i64(b, row ? 0 : p->types.period);
        rb_u64(b, sid);
    }
}

static int ch_put(hs_store *base, const hs_store_profile *const *profiles, size_t n, unsigned char *marked,
                  char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    if (n == 0)
        return 0;
    size_t n_rows = 0;
    for (size_t i = 0; i < n; i++) {
        const hs_store_profile *p = profiles[i];
        if (!p->service || !*p->service || !p->type || !*p->type || !p->id[0]) {
            set_err(err, errlen, "clickhouse: a profile needs an id, a service and a type");
            return -1;
        }
        if (p->types.n == 0 || p->types.n > HS_STORE_MAX_VALUES || p->types.default_index < 0 ||
            p->types.default_index > 255) {
            set_err(err, errlen, "clickhouse: bad sample types in profile %s", p->id);
            return -1;
        }
        n_rows += p->n_samples + 1;
    }
    if (n_rows > CH_MAX_BLOCK) {
        set_err(err, errlen, "clickhouse: a put of %zu rows (at most %d, one block): store fewer profiles at once",
                n_rows, CH_MAX_BLOCK);
        return -1;
    }
    int rc = ch_schema(s, err, errlen);
    if (rc)
        return rc;
    const hs_store_profile **ps = malloc(n * sizeof *ps);
    ch_ord *ord = malloc(n * sizeof *ord);
    char *dup = calloc(n, 1);
    uint64_t *ins = malloc(n * sizeof *ins);
    hs_bytes q = {0}, ans = {0}, stacks = {0}, rows = {0};
    ch_daystack *added = NULL;
    size_t n_added = 0;
    if (!ps || !ord || !dup || !ins) {
        set_err(err, errlen, "out of memory");
        rc = -1;
        goto out;
    }
    /* ps: the profiles by id; ord[k].i: ps[k]'s place in profiles */
    for (size_t i = 0; i < n; i++)
        ord[i] = (ch_ord){profiles[i], i};
    qsort(ord, n, sizeof *ord, cmp_id);
    for (size_t i = 0; i < n; i++)
        ps[i] = ord[i].p;
    for (size_t i = 1; i < n; i++)
        if (strcmp(ps[i]->id, ps[i - 1]->id) == 0)
            dup[i] = 1;

    /* Profiles of one (service, type) must agree on their sample types,
     * with each other and with the stored ones. */
    for (size_t i = 0; i < n; i++) {
        const hs_store_profile *p = profiles[i], *first = p;
        size_t j;
        for (j = 0; j < i; j++)
            if (strcmp(profiles[j]->service, p->service) == 0 && strcmp(profiles[j]->type, p->type) == 0)
                break;
        if (j < i)
            continue; /* checked with its kind's first profile */
        const hs_store_types *ref;
        rc = kind_types(s, p->service, p->type, &ref, err, errlen);
        if (rc < 0)
            goto out;
        if (rc == 1)
            ref = &first->types;
        rc = 0;
        for (j = i; j < n; j++) {
            const hs_store_profile *o = profiles[j];
            if (strcmp(o->service, p->service) == 0 && strcmp(o->type, p->type) == 0 && !same_types(&o->types, ref)) {
                char got[256], want[256];
                hs_store_types_format(&o->types, got, sizeof got);
                hs_store_types_format(ref, want, sizeof want);
                set_err(err, errlen,
                        "profile %s: its sample types (%s) differ from those %s for %s/%s (%s): upload it "
                        "under another type or service",
                        o->id, got, ref == &first->types ? "of an earlier profile of the batch" : "stored",
                        o->service, o->type, want);
                rc = HS_STORE_REFUSED;
                goto out;
            }
        }
    }

    /* 1. ids already stored (in the batch's days), CH_IN_CHUNK at a time. */
    for (size_t at = 0; at < n; at += CH_IN_CHUNK) {
        size_t end = n - at < CH_IN_CHUNK ? n : at + CH_IN_CHUNK, asked = 0;
        hs_bytes_printf(&q, "SELECT DISTINCT id FROM %s.samples WHERE rowtype = 0 AND day", s->db);
        buf_days_in(&q, ps + at, end - at);
        hs_bytes_str(&q, " AND id IN (");
        for (size_t i = at; i < end; i++) {
            if (dup[i])
                continue;
            if (asked++)
                hs_bytes_str(&q, ",");
            buf_quote(&q, ps[i]->id);
        }
        hs_bytes_str(&q, ") FORMAT RowBinary");
        if (!asked) {
            free(q.p);
            q = (hs_bytes){0};
            continue;
        }
        rc = run(s, &q, &ans, err, errlen);
        if (rc)
            goto out;
        ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
        while (rd_more(&r)) {
            size_t len;
            const unsigned char *id = rd_bytes(&r, &len);
            if (r.bad)
                break;
            for (size_t i = at; i < end; i++)
                if (!dup[i] && strlen(ps[i]->id) == len && memcmp(ps[i]->id, id, len) == 0)
                    dup[i] = 1;
        }
        free(ans.p);
        ans = (hs_bytes){0};
        if (r.bad) {
            rc = malformed(err, errlen, "id check");
            goto out;
        }
    }
    size_t n_new = 0;
    for (size_t i = 0; i < n; i++) {
        marked[ord[i].i] = (unsigned char)dup[i];
        n_new += !dup[i];
    }
    if (n_new == 0)
        goto out;
    if (random_tokens(ins, n, err, errlen)) {
        rc = -1;
        goto out;
    }

    /* 2. the stacks the batch's days lack, then every row in one block. */
    rc = stacks_to_insert(s, ps, dup, n, &stacks, &added, &n_added, err, errlen);
    if (rc)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (!dup[i])
            profile_rows(&rows, ps[i], ins[i]);
    if (stacks.oom || rows.oom) {
        set_err(err, errlen, "out of memory");
        rc = -1;
        goto out;
    }
    if (stacks.n && (rc = ch_insert(s, "stacks", &stacks, err, errlen)))
        goto out;
    if (n_added)
        cache_add(s, added, n_added);
    rc = ch_insert(s, "samples", &rows, err, errlen);
out:
    free(ps);
    free(ord);
    free(dup);
    free(ins);
    free(added);
    free(q.p);
    free(ans.p);
    free(stacks.p);
    free(rows.p);
    return rc;
}

/* ---- selections ---- */

/* The retention watermark: profiles that started before it are gone
 * (see ch_retain). Read once per call, so every query of the call agrees,
 * and written as a plain bound that merges with the time range. */
static int watermark(ch_store *s, int64_t *wm, char *err, size_t errlen)
{
    hs_bytes b = {0}, ans = {0};
    hs_bytes_printf(&b, "SELECT max(before_ns) FROM %s.retention FORMAT RowBinary", s->db);
    int rc = run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    *wm = rd_i64(&r);
    free(ans.p);
    return r.bad ? malformed(err, errlen, "retention") : 0;
}

/* The watermark the last merge or series saw (*wm; 0 if none has yet),
 * and wm_keep(s, wm) to remember one seen. */
static int wm_cached(ch_store *s, int64_t *wm)
{
    pthread_mutex_lock(&s->mu);
    int known = s->merge_wm_known;
    *wm = s->merge_wm;
    pthread_mutex_unlock(&s->mu);
    return known;
}

static void wm_keep(ch_store *s, int64_t wm)
{
    pthread_mutex_lock(&s->mu);
    s->merge_wm = wm;
    s->merge_wm_known = 1;
    pthread_mutex_unlock(&s->mu);
}

/* where_rows' row for the profiles table, which has no row type. */
#define CH_NARROW (-1)

/* The conditions every row of the selection meets: its row type (none
 * when row is CH_NARROW), the kind, the time range from max(from,
 * watermark) (and its days, which prune partitions). */
static void where_rows(hs_bytes *b, const hs_store_query *q, int64_t wm, int row)
{
    int64_t from = q->from_ns > wm ? q->from_ns : wm;
    if (row == CH_NARROW)
        hs_bytes_str(b, "1");
    else
        hs_bytes_printf(b, "rowtype = %d", row);
    if (q->service && q->type)
        hs_bytes_printf(b, " AND kind = %" PRIu64, kind_of(q->service, q->type));
    if (from > 0) {
        hs_bytes_printf(b, " AND start_ns >= %" PRId64 " AND " CH_HOUR_KEY " >= %" PRId64 " AND day >= ", from,
                   (int64_t)(from / CH_BUCKET_NS));
        buf_day(b, day_of(from));
    }
    if (q->until_ns) {
        hs_bytes_printf(b, " AND start_ns < %" PRId64 " AND " CH_HOUR_KEY " <= %" PRId64 " AND day <= ", q->until_ns,
                   (int64_t)(q->until_ns / CH_BUCKET_NS));
        buf_day(b, day_of(q->until_ns));
    }
}

/* The version and label conditions of q (on the profile rows' or the
 * series' columns of the same names). */
static void where_attrs(hs_bytes *b, const hs_store_query *q)
{
    if (q->n_versions) {
        hs_bytes_str(b, " AND version IN (");
        for (size_t i = 0; i < q->n_versions; i++) {
            if (i)
                hs_bytes_str(b, ",");
            buf_quote(b, q->versions[i]);
        }
        hs_bytes_str(b, ")");
    }
    for (size_t i = 0; i < q->n_labels; i++) {
        hs_bytes_str(b, " AND arrayExists((k, v) -> k = ");
        buf_quote(b, q->labels[i].key);
        hs_bytes_str(b, " AND v = ");
        buf_quote(b, q->labels[i].value);
        hs_bytes_str(b, ", label_keys, label_values)");
    }
}

/* Every condition of q on the profile rows. */
static void where_profiles(hs_bytes *b, const hs_store_query *q, int64_t wm)
{
    where_rows(b, q, wm, 0);
    if (q->service) {
        hs_bytes_str(b, " AND service = ");
        buf_quote(b, q->service);
    }
    if (q->type) {
        hs_bytes_str(b, " AND type = ");
        buf_quote(b, q->type);
    }
    where_attrs(b, q);
    if (q->n_ids) {
        hs_bytes_str(b, " AND id IN (");
        for (size_t i = 0; i < q->n_ids; i++) {
            if (i)
                hs_bytes_str(b, ",");
            buf_quote(b, q->ids[i]);
        }
        hs_bytes_str(b, ")");
    }
}

/* " AND (start_ns, ins) IN (...)": the rows (profile or sample rows) of
 * the chosen copy, the smallest token, of each id among the selected
 * profiles, evaluated on each shard over its local rows (a copy's rows all
 * carry its profile's start_ns). The exact way, for id selections and
 * whenever the series index cannot be trusted (where_sids). */
static void where_chosen(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm)
{
    hs_bytes_printf(b, " AND (start_ns, ins) IN (SELECT argMin(start_ns, ins), min(ins) FROM %s.samples%s WHERE ", s->db,
               s->local);
    where_profiles(b, q, wm);
    hs_bytes_str(b, " GROUP BY id)");
}

/* " AND ins NOT IN (losers)", nothing when there are none. */
static void where_not_losers(hs_bytes *b, const uint64_t *losers, size_t n_losers)
{
    if (!n_losers)
        return;
    hs_bytes_str(b, " AND ins NOT IN (");
    for (size_t i = 0; i < n_losers; i++)
        hs_bytes_printf(b, "%s%" PRIu64, i ? "," : "", losers[i]);
    hs_bytes_str(b, ")");
}

/* " AND day >= ... AND day <= ...": the days of q's range from
 * max(from, watermark) (where_days_of: of another Date column). */
static void where_days_of(hs_bytes *b, const char *col, const hs_store_query *q, int64_t wm)
{
    int64_t from = q->from_ns > wm ? q->from_ns : wm;
    if (from > 0) {
        hs_bytes_printf(b, " AND %s >= ", col);
        buf_day(b, day_of(from));
    }
    if (q->until_ns) {
        hs_bytes_printf(b, " AND %s <= ", col);
        buf_day(b, day_of(q->until_ns));
    }
}

static void where_days(hs_bytes *b, const hs_store_query *q, int64_t wm) { where_days_of(b, "day", q, wm); }

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

static void fp_add(ch_fp *f, uint64_t day, uint64_t rows)
{
    f->n++;
    f->sum += hs_hmap_mix(day << 48 ^ rows);
}

/* "SELECT cols FROM system.parts ... GROUP BY min_date": per day of q's
 * range from max(from, wm) (min_date: samples is partitioned by day) the
 * rows samples holds, on the host asked (so only on one server); cols
 * name the day toUInt64(min_date) and the rows sum(rows). */
static void day_rows(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, const char *cols)
{
    hs_bytes_printf(b, "SELECT %s FROM system.parts WHERE active AND database = ", cols);
    buf_quote(b, s->db);
    hs_bytes_str(b, " AND table = 'samples'");
    where_days_of(b, "min_date", q, wm);
    hs_bytes_str(b, " GROUP BY min_date");
}

/* " AND sid IN (...)": the rows of the series whose version and labels
 * q selects, looked up in the series table (a few rows per series and
 * day) on each shard, or listed when the merge looked them up already
 * (ids: in the range's days, through the Distributed table; every
 * listed id has the selected version and labels, whichever day or shard
 * it came from). sid follows (rowtype, kind, hour) in the samples'
 * key, so within each hour ClickHouse reads only the selected series'
 * granules. Exact only when the series table holds every profile row of
 * the days (checked by the merge, series_check) and no id is stored twice
 * among them: else the caller takes where_chosen. */
static void where_sids(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, const ch_sids *ids)
{
    if (ids) {
        hs_bytes_str(b, ids->n ? " AND sid IN (" : " AND 0");
        for (size_t i = 0; i < ids->n; i++)
            hs_bytes_printf(b, "%s%" PRIu64, i ? "," : "", ids->v[i]);
        hs_bytes_str(b, ids->n ? ")" : "");
        return;
    }
    hs_bytes_printf(b, " AND sid IN (SELECT sid FROM %s.series%s WHERE kind = %" PRIu64, s->db, s->local,
               kind_of(q->service, q->type));
    where_days(b, q, wm);
    where_attrs(b, q);
    hs_bytes_str(b, ")");
}

/* How a merge selects its rows. */
typedef enum {
    CH_ALL,    /* no filter: every row of the kind and range but the losers */
    CH_SERIES, /* versions or labels: the selected series' rows (where_sids) */
    CH_CHOSEN, /* the exact way (where_chosen): ids, or the others unsure */
} ch_sel;

/* " AND ..." selecting the rows of sel (profile or sample rows: after
 * where_rows or where_profiles), but for the other copies of an id (left
 * by two servers racing) listed in losers: almost always none. */
static void where_sel(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, ch_sel sel,
                      const ch_sids *ids, const uint64_t *losers, size_t n_losers)
{
    if (sel == CH_CHOSEN) {
        where_chosen(b, s, q, wm);
        return;
    }
    if (sel == CH_SERIES)
        where_sids(b, s, q, wm, ids);
    where_not_losers(b, losers, n_losers);
}

/* " WHERE ..." (after FROM samples): the sample rows of the selection, one
 * copy per id (where_chosen or where_sids as PREWHERE on one server:
 * ClickHouse then reads the other columns only of the rows of selected
 * profiles or series; a Distributed table of 18.16 takes no PREWHERE). */
static void where_samples(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, ch_sel sel,
                          const ch_sids *ids, const uint64_t *losers, size_t n_losers)
{
    if (sel == CH_SERIES && !s->cluster && !n_losers) {
        hs_bytes_str(b, " PREWHERE 1");
        where_sids(b, s, q, wm, ids);
        hs_bytes_str(b, " WHERE ");
        where_rows(b, q, wm, 1);
        return;
    }
    if (sel == CH_CHOSEN) {
        if (s->cluster) {
            hs_bytes_str(b, " WHERE ");
            where_rows(b, q, wm, 1);
            where_chosen(b, s, q, wm);
        } else {
            hs_bytes_str(b, " PREWHERE 1");
            where_chosen(b, s, q, wm);
            hs_bytes_str(b, " WHERE ");
            where_rows(b, q, wm, 1);
        }
        return;
    }
    hs_bytes_str(b, " WHERE ");
    where_rows(b, q, wm, 1);
    where_sel(b, s, q, wm, sel, ids, losers, n_losers);
}

static int need_service_type(const hs_store_query *q, char *err, size_t errlen)
{
    if (!q || !q->service || !q->type) {
        set_err(err, errlen, "clickhouse: the query needs a service and a type");
        return -1;
    }
    return 0;
}

/* Run q (built by the caller) and hand back its answer; frees q. */
static int run(ch_store *s, hs_bytes *q, hs_bytes *ans, char *err, size_t errlen)
{
    int rc;
    if (q->oom) {
        set_err(err, errlen, "out of memory");
        rc = -1;
    } else {
        rc = ch_schema(s, err, errlen);
        if (rc == 0)
            rc = ch_query(s, q->s, ans, err, errlen);
    }
    free(q->p);
    *q = (hs_bytes){0};
    return rc;
}

static int malformed(char *err, size_t errlen, const char *what)
{
    set_err(err, errlen, "clickhouse: malformed answer to the %s query", what);
    return -1;
}

/* ---- listings ---- */

static int ch_strings(hs_store *base, int what, const hs_store_query *q, const char *name, char ***out, size_t *n,
                      char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    static const hs_store_query all = {0};
    if (!q)
        q = &all;
    *out = NULL;
    *n = 0;
    int64_t wm;
    int rc = watermark(s, &wm, err, errlen);
    if (rc)
        return rc;
    hs_bytes b = {0}, ans = {0};
    switch (what) {
    case HS_STORE_SERVICES:
        hs_bytes_str(&b, "SELECT DISTINCT service AS x");
        break;
    case HS_STORE_TYPES:
        hs_bytes_str(&b, "SELECT DISTINCT type AS x");
        break;
    case HS_STORE_VERSIONS:
        hs_bytes_str(&b, "SELECT DISTINCT version AS x");
        break;
    case HS_STORE_LABEL_NAMES:
        hs_bytes_str(&b, "SELECT DISTINCT arrayJoin(label_keys) AS x");
        break;
    case HS_STORE_LABEL_VALUES:
        if (!name) {
            set_err(err, errlen, "clickhouse: label values need a label name");
            return -1;
        }
        hs_bytes_str(&b, "SELECT DISTINCT label_values[indexOf(label_keys, ");
        buf_quote(&b, name);
        hs_bytes_str(&b, ")] AS x");
        break;
    default:
        set_err(err, errlen, "clickhouse: unknown listing %d", what);
        return -1;
    }
    hs_bytes_printf(&b, " FROM %s.samples WHERE ", s->db);
    where_profiles(&b, q, wm);
    if (what == HS_STORE_LABEL_VALUES) {
        hs_bytes_str(&b, " AND has(label_keys, ");
        buf_quote(&b, name);
        hs_bytes_str(&b, ")");
    }
    hs_bytes_str(&b, " ORDER BY x FORMAT RowBinary");
    rc = run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    size_t cap = 0;
    char **v = NULL;
    while (rd_more(&r)) {
        char *str = rd_strdup(&r);
        if (!str)
            break;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                free(str);
                r.bad = 1;
                break;
            }
            v = nv;
        }
        v[(*n)++] = str;
    }
    free(ans.p);
    if (r.bad) {
        hs_store_strings_free(v, *n);
        *n = 0;
        return malformed(err, errlen, "listing");
    }
    *out = v;
    return 0;
}

/* ---- type info ---- */

/* Read sample_types, sample_units, default_index, period_type,
 * period_unit, period into a types struct whose strings live in one
 * malloc'd block (*block). */
static int read_types(ch_rd *r, hs_store_types *t, char **block)
{
    const unsigned char *start = r->p;
    memset(t, 0, sizeof *t);
    *block = NULL;
    /* First pass: sizes. */
    size_t total = 0, nt, nu, len;
    nt = (size_t)rd_varint(r);
    for (size_t i = 0; i < nt; i++) {
        rd_bytes(r, &len);
        total += len + 1;
    }
    nu = (size_t)rd_varint(r);
    for (size_t i = 0; i < nu; i++) {
        rd_bytes(r, &len);
        total += len + 1;
    }
    rd_u8(r);
    rd_bytes(r, &len);
    total += len + 1;
    rd_bytes(r, &len);
    total += len + 1;
    rd_i64(r);
    if (r->bad || nt != nu || nt > HS_STORE_MAX_VALUES)
        return -1;
    char *blk = malloc(total ? total : 1), *w = blk;
    if (!blk)
        return -1;
    r->p = start;
#define CH_COPY(dst)                                            \
    do {                                                        \
        const unsigned char *sp = rd_bytes(r, &len);            \
        memcpy(w, sp, len);                                     \
        w[len] = 0;                                             \
        (dst) = w;                                              \
        w += len + 1;                                           \
    } while (0)
    t->n = (size_t)rd_varint(r);
    for (size_t i = 0; i < t->n; i++)
        CH_COPY(t->type[i]);
    rd_varint(r);
    for (size_t i = 0; i < t->n; i++)
        CH_COPY(t->unit[i]);
    t->default_index = rd_u8(r);
    CH_COPY(t->period_type);
    CH_COPY(t->period_unit);
    t->period = rd_i64(r);
#undef CH_COPY
    *block = blk;
    return 0;
}

/* A copy of src whose strings live in one malloc'd block. */
static int types_dup(const hs_store_types *src, hs_store_types *dst, char **block)
{
    size_t total = strlen(src->period_type) + strlen(src->period_unit) + 2;
    for (size_t i = 0; i < src->n; i++)
        total += strlen(src->type[i]) + strlen(src->unit[i]) + 2;
    char *w = malloc(total);
    if (!w)
        return -1;
    *block = w;
    *dst = *src;
#define CH_DUP(field)                    \
    do {                                 \
        size_t l_ = strlen(src->field);  \
        memcpy(w, src->field, l_ + 1);   \
        dst->field = w;                  \
        w += l_ + 1;                     \
    } while (0)
    for (size_t i = 0; i < src->n; i++) {
        CH_DUP(type[i]);
        CH_DUP(unit[i]);
    }
    CH_DUP(period_type);
    CH_DUP(period_unit);
#undef CH_DUP
    return 0;
}

#define CH_TYPES_COLUMNS "sample_types, sample_units, default_index, period_type, period_unit, period"

/* The sample types stored for (service, type): 0 with *out pointing into
 * the store's list (valid until close), 1 if no profile has them, or an
 * error. Types never change once stored (put refuses others), so an entry
 * found is kept for the process's life. */
static int kind_types(ch_store *s, const char *service, const char *type, const hs_store_types **out, char *err,
                      size_t errlen)
{
    pthread_mutex_lock(&s->mu);
    ch_types_entry *e;
    for (e = s->types; e; e = e->next)
        if (strcmp(e->service, service) == 0 && strcmp(e->type, type) == 0)
            break;
    pthread_mutex_unlock(&s->mu);
    if (e) {
        *out = &e->types;
        return 0;
    }
    hs_bytes b = {0}, ans = {0};
    hs_bytes_printf(&b, "SELECT " CH_TYPES_COLUMNS " FROM %s.samples WHERE rowtype = 0 AND kind = %" PRIu64 " AND service = ",
               s->db, kind_of(service, type));
    buf_quote(&b, service);
    hs_bytes_str(&b, " AND type = ");
    buf_quote(&b, type);
    hs_bytes_str(&b, " LIMIT 1 FORMAT RowBinary");
    int rc = run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    if (ans.n == 0) {
        free(ans.p);
        return 1;
    }
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    hs_store_types t;
    char *blk;
    rc = read_types(&r, &t, &blk);
    free(ans.p);
    if (rc)
        return malformed(err, errlen, "type info");
    e = calloc(1, sizeof *e);
    if (!e || !(e->service = strdup(service)) || !(e->type = strdup(type))) {
        if (e)
            free(e->service);
        free(e);
        free(blk);
        set_err(err, errlen, "out of memory");
        return -1;
    }
    e->types = t;
    e->strings = blk;
    pthread_mutex_lock(&s->mu);
    e->next = s->types;
    s->types = e;
    pthread_mutex_unlock(&s->mu);
    *out = &e->types;
    return 0;
}

static int ch_type_info(hs_store *base, const hs_store_query *q, hs_store_types *out, char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    if (need_service_type(q, err, errlen))
        return -1;
    const hs_store_types *t;
    int rc = kind_types(s, q->service, q->type, &t, err, errlen);
    if (rc == 1) {
        set_err(err, errlen, "no profile of service '%s' and type '%s'", q->service, q->type);
        return -1;
    }
    if (rc == 0)
        *out = *t;
    return rc;
}

static int same_types(const hs_store_types *a, const hs_store_types *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->type[i], b->type[i]) || strcmp(a->unit[i], b->unit[i]))
            return 0;
    return 1;
}

/* ---- merge ---- */

/* The rollup a merge reads and the buckets of its range it reads there
 * (rollup_range). */
typedef struct {
    int series;     /* the series rollup (per day; else a per-hour one) */
    int days;       /* whole days from the daily version rollup */
    int64_t unit;   /* its bucket: CH_DAY_NS or CH_BUCKET_NS */
    int64_t b0, b1; /* the whole buckets [b0, b1) (b1 == 0: no upper bound) */
} ch_roll;

/* Whether a rollup may answer q, which (*r) and the whole buckets of its
 * range there: none with an id filter or an empty range; with no filter
 * or versions only the hourly rollup (or version rollup: its whole days
 * from the daily one when days is set), with one label of a key
 * rollup_labels lists the label rollup, with any other labels (and
 * versions) the series rollup (the caller selects the series:
 * CH_SERIES). */
static int rollup_range(const ch_store *s, const hs_store_query *q, int64_t wm, int days, ch_roll *r)
{
    if (!s->rollup || q->n_ids)
        return 0;
    r->series = q->n_labels && (q->n_labels > 1 || q->n_versions || !s->n_roll_keys ||
                                !bsearch(&q->labels[0].key, s->roll_keys, s->n_roll_keys, sizeof *s->roll_keys, cmp_str));
    r->days = days && q->n_versions && !q->n_labels;
    r->unit = r->series ? CH_DAY_NS : CH_BUCKET_NS;
    int64_t from = q->from_ns > wm ? q->from_ns : wm;
    if (from < 0)
        from = 0; /* (the rollup holds no profile that started before 1970) */
    if (from > INT64_MAX - r->unit)
        return 0;
    r->b0 = (from + r->unit - 1) / r->unit * r->unit;
    r->b1 = 0;
    if (q->until_ns) {
        r->b1 = q->until_ns / r->unit * r->unit;
        if (r->b1 <= r->b0)
            return 0;
    }
    return 1;
}

/* " WHERE ..." of one rollup table (from_buckets): q's kind, its
 * selection there (the series, the label or the versions) and the
 * buckets [b0, b1) (b1 == 0: no upper bound). */
static void where_buckets(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, const ch_roll *r,
                          const ch_sids *ids, int64_t b0, int64_t b1, int row)
{
    hs_bytes_printf(b, " WHERE rowtype = %d AND kind = %" PRIu64, row, kind_of(q->service, q->type));
    if (r->series) {
        where_sids(b, s, q, wm, ids);
    } else if (q->n_labels) { /* (one: rollup_range) */
        hs_bytes_str(b, " AND label_key = ");
        buf_quote(b, q->labels[0].key);
        hs_bytes_str(b, " AND label_value = ");
        buf_quote(b, q->labels[0].value);
    }
    hs_bytes_printf(b, " AND bucket >= %" PRId64 " AND day >= ", b0);
    buf_day(b, day_of(b0));
    if (b1) {
        hs_bytes_printf(b, " AND bucket < %" PRId64 " AND day <= ", b1);
        buf_day(b, day_of(b1 - 1));
    }
    if (q->n_versions && !r->series)
        where_attrs(b, q); /* (versions only: rollup_range) */
}

/* " FROM ...": the rows of r's rollup of q's kind (and versions: then
 * from the version rollup; or its label: the label rollup; or the series
 * q selects: the series rollup) in the buckets [b0, b1), after rowtype;
 * with r->days, the whole days among them from the daily version rollup
 * and only the other hours from the hourly one. */
static void from_buckets(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, const ch_roll *r,
                         const ch_sids *ids, int64_t b0, int64_t b1, int row)
{
    const char *table = r->series ? "rollup_series" : q->n_labels ? "rollup_label" : q->n_versions ? "rollup_version" : "rollup";
    int64_t d0 = (b0 + CH_DAY_NS - 1) / CH_DAY_NS * CH_DAY_NS, d1 = b1 / CH_DAY_NS * CH_DAY_NS;
    if (!r->days || (b1 && d1 <= d0) || b0 > INT64_MAX - CH_DAY_NS) {
        hs_bytes_printf(b, " FROM %s.%s", s->db, table);
        where_buckets(b, s, q, wm, r, ids, b0, b1, row);
        return;
    }
    static const char cols[] = "SELECT stack, profiles, v0, v1, v2, v3 FROM";
    hs_bytes_printf(b, " FROM (%s %s.%s_day", cols, s->db, table);
    where_buckets(b, s, q, wm, r, ids, d0, b1 ? d1 : 0, row);
    if (b0 < d0) {
        hs_bytes_printf(b, " UNION ALL %s %s.%s", cols, s->db, table);
        where_buckets(b, s, q, wm, r, ids, b0, d0, row);
    }
    if (b1 && d1 < b1) {
        hs_bytes_printf(b, " UNION ALL %s %s.%s", cols, s->db, table);
        where_buckets(b, s, q, wm, r, ids, d1, b1, row);
    }
    hs_bytes_str(b, ")");
}

/* The rows of a merge's answer (RowBinary): the tag, then a stack and its
 * sums (tag CH_ROW_STACK), the totals (CH_ROW_TOTALS: the count in the
 * stack column, the sums, and in the array the time span and the checks),
 * or the watermark (CH_ROW_WM, in v0). One request answers all three. */
enum { CH_ROW_STACK, CH_ROW_TOTALS, CH_ROW_WM, CH_ROW_DAY /* (day_rows, in key and v0) */ };
#define CH_ROW_DAY_N 3 /* (CH_ROW_DAY, for SQL text) */

/* ", sum(v0), ... , toInt64(0)": the sums of the nv value columns the type
 * has of col (the others are 0: not read at all). */
static void merge_sums(hs_bytes *b, const char *col, size_t nv)
{
    for (size_t v = 0; v < HS_STORE_MAX_VALUES; v++)
        if (v < nv)
            hs_bytes_printf(b, ", sum(%s%zu)", col, v);
        else
            hs_bytes_str(b, ", toInt64(0)");
}

/* Which ends of q's range (CH_SUB_HEAD, CH_SUB_TAIL) a merge from r's
 * buckets [b0, b1) reads as the whole bucket (hour or day) from the
 * rollup minus the samples of the bucket's part outside the range (the
 * complement), rather than the samples of its part inside: when the part
 * outside is the smaller (a range from 10 past an hour: 10 minutes of
 * sample rows instead of 50). Only for buckets after 1970 (the rollup
 * has no earlier rows) and bounded ends. */
enum { CH_SUB_HEAD = 1, CH_SUB_TAIL = 2 };
static int roll_complements(const hs_store_query *q, int64_t wm, const ch_roll *r)
{
    int64_t from = q->from_ns > wm ? q->from_ns : wm, u = r->unit, b0 = r->b0, b1 = r->b1;
    int sub = 0;
    if (from > 0 && from < b0 && b0 - u > 0 && from - (b0 - u) < b0 - from)
        sub |= CH_SUB_HEAD;
    if (b1 && q->until_ns > b1 && b1 <= INT64_MAX - u && b1 + u - q->until_ns < q->until_ns - b1)
        sub |= CH_SUB_TAIL;
    return sub;
}

/* The part of a complemented end (roll_complements) outside q's range:
 * [bucket start, from) at the head, [until, bucket end) at the tail, as a
 * query of its own (with watermark 0: the rollup summed every row of the
 * bucket, those behind the watermark too). */
static hs_store_query roll_outside(const hs_store_query *q, int64_t wm, const ch_roll *r, int end)
{
    hs_store_query o = *q;
    if (end == CH_SUB_HEAD) {
        o.from_ns = r->b0 - r->unit;
        o.until_ns = q->from_ns > wm ? q->from_ns : wm;
    } else {
        o.from_ns = q->until_ns;
        o.until_ns = r->b1 + r->unit;
    }
    return o;
}

/* The merge from r's rollup: its buckets [b0, b1), summed on each shard,
 * plus the sample rows of the range's partial buckets at either end (of
 * the rows sel selects), or for the ends of sub (roll_complements) the
 * whole bucket from the rollup minus the sample rows of its part outside
 * the range; nv value columns. Every part also counts its sample rows (the
 * rollup's profiles column), so a stack whose rows are all outside the
 * range (count 0) is left out, while one whose values are all 0 stays.
 * Rows of CH_ROW_STACK. */
static void merge_rollup(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, ch_sel sel,
                         const ch_sids *ids, const ch_roll *r, int sub, size_t nv)
{
    int64_t from = q->from_ns > wm ? q->from_ns : wm, b0 = r->b0, b1 = r->b1;
    /* (from <= 0: no lower bound, and profiles before 1970 are only in
     * the samples, unless the series tables are trusted and samples has
     * no row in their day, day 0) */
    int early = from <= 0 && !(r->series && ids && ids->trusted && ids->no_day0);
    int head = (from < b0 || early) && !(sub & CH_SUB_HEAD), tail = b1 && q->until_ns > b1 && !(sub & CH_SUB_TAIL);
    hs_bytes_printf(b, "SELECT toUInt8(%d), stack", CH_ROW_STACK);
    merge_sums(b, "s", nv);
    hs_bytes_str(b, ", emptyArrayInt64() FROM (SELECT stack, toInt64(sum(profiles)) AS c");
    for (size_t v = 0; v < nv; v++)
        hs_bytes_printf(b, ", sum(v%zu) AS s%zu", v, v);
    from_buckets(b, s, q, wm, r, ids, sub & CH_SUB_HEAD ? b0 - r->unit : b0, sub & CH_SUB_TAIL ? b1 + r->unit : b1,
                 1);
    hs_bytes_str(b, " GROUP BY stack");
    if (head || tail) {
        hs_bytes_str(b, " UNION ALL SELECT stack, toInt64(count()) AS c");
        for (size_t v = 0; v < nv; v++)
            hs_bytes_printf(b, ", sum(v%zu) AS s%zu", v, v);
        hs_bytes_printf(b, " FROM %s.samples WHERE ", s->db);
        where_rows(b, q, wm, 1);
        where_sel(b, s, q, wm, sel, ids, NULL, 0);
        /* (each bound also on the key's hour, which prunes granules) */
        hs_bytes_str(b, " AND (");
        if (head)
            hs_bytes_printf(b, "(start_ns < %" PRId64 " AND " CH_HOUR_KEY " <= %" PRId64 ")", b0,
                       (int64_t)(b0 / CH_BUCKET_NS));
        if (tail)
            hs_bytes_printf(b, "%s(start_ns >= %" PRId64 " AND " CH_HOUR_KEY " >= %" PRId64 ")", head ? " OR " : "", b1,
                       (int64_t)(b1 / CH_BUCKET_NS));
        hs_bytes_str(b, ") GROUP BY stack");
    }
    for (int end = CH_SUB_HEAD; end <= CH_SUB_TAIL; end <<= 1) {
        if (!(sub & end))
            continue;
        hs_store_query o = roll_outside(q, wm, r, end);
        hs_bytes_str(b, " UNION ALL SELECT stack, -toInt64(count()) AS c");
        for (size_t v = 0; v < nv; v++)
            hs_bytes_printf(b, ", -sum(v%zu) AS s%zu", v, v);
        hs_bytes_printf(b, " FROM %s.samples WHERE ", s->db);
        where_rows(b, &o, 0, 1);
        where_sel(b, s, &o, 0, sel, ids, NULL, 0);
        hs_bytes_str(b, " GROUP BY stack");
    }
    hs_bytes_str(b, ") GROUP BY stack HAVING sum(c) > 0");
}

/* The merged stacks of the selection (sel, the losers left out; from the
 * rollup r when roll): one GROUP BY inside ClickHouse, rows of
 * CH_ROW_STACK. */
static void merge_stacks(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, ch_sel sel,
                         const ch_sids *ids, const uint64_t *losers, size_t n_losers, int roll, const ch_roll *r,
                         size_t nv)
{
    if (roll) {
        merge_rollup(b, s, q, wm, sel, ids, r, roll_complements(q, wm, r), nv);
        return;
    }
    hs_bytes_printf(b, "SELECT toUInt8(%d), stack", CH_ROW_STACK);
    merge_sums(b, "v", nv);
    hs_bytes_printf(b, ", emptyArrayInt64() FROM %s.samples", s->db);
    where_samples(b, s, q, wm, sel, ids, losers, n_losers);
    hs_bytes_str(b, " GROUP BY stack");
}

/* ", (profile rows of the days), (the series' count of them), (the
 * profiles table's)" (as Int64): the series table holds every profile
 * row of q's kind in the days of its range when the first two are equal,
 * the profiles table when the first and third are (all count every copy;
 * a row lost with a failed view insert, or rows stored before the table
 * existed, make them differ). Whole days: the tables are partitioned by
 * day and dropped together. */
static void series_check(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm)
{
    static const char *const counts[3] = {"count() FROM %s.samples WHERE rowtype = 0 AND",
                                          "sum(profiles) FROM %s.series WHERE", "count() FROM %s.profiles WHERE"};
    for (int t = 0; t < 3; t++) {
        hs_bytes_str(b, ", toInt64((SELECT ");
        hs_bytes_printf(b, counts[t], s->db);
        hs_bytes_printf(b, " kind = %" PRIu64, kind_of(q->service, q->type));
        where_days(b, q, wm);
        hs_bytes_str(b, "))");
    }
}

/* The tokens of the copies to leave out of q's range (none unless two
 * servers raced on an id): the ids stored more than once are found by
 * their hash, pid (a GROUP BY of one integer column over the profile
 * rows), and only their rows are grouped by id; every copy but the one
 * with the smallest token per id. *losers: malloc'd. */
static int find_losers(ch_store *s, const hs_store_query *q, int64_t wm, uint64_t **losers, size_t *n_losers,
                       char *err, size_t errlen)
{
    hs_bytes b = {0}, ans = {0};
    hs_bytes_printf(&b, "SELECT ins FROM %s.samples WHERE ", s->db);
    where_profiles(&b, q, wm);
    hs_bytes_printf(&b, " AND pid IN (SELECT pid FROM %s.samples%s WHERE ", s->db, s->local);
    where_profiles(&b, q, wm);
    hs_bytes_printf(&b, " GROUP BY pid HAVING count() > 1) AND ins NOT IN (SELECT min(ins) FROM %s.samples%s WHERE ",
               s->db, s->local);
    where_profiles(&b, q, wm);
    hs_bytes_printf(&b, " AND pid IN (SELECT pid FROM %s.samples%s WHERE ", s->db, s->local);
    where_profiles(&b, q, wm);
    hs_bytes_str(&b, " GROUP BY pid HAVING count() > 1) GROUP BY id) FORMAT RowBinary");
    int rc = run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    if (ans.n % 8) {
        free(ans.p);
        return malformed(err, errlen, "copies");
    }
    size_t n = ans.n / 8;
    uint64_t *v = malloc((n ? n : 1) * sizeof *v);
    ch_rd lr = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    for (size_t i = 0; v && i < n; i++)
        v[i] = rd_u64(&lr);
    free(ans.p);
    if (!v) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    *losers = v;
    *n_losers = n;
    return 0;
}

/* The answer of a merge request (merge_request): the stack rows into
 * out->rows (when stacks is set), the totals into out and *x (their array:
 * the time span, then the checks; *nx of them) when the row is there, the
 * watermark into *wm_seen when its row is. -1 when malformed. */
static int merge_answer(const hs_bytes *ans, hs_store_merged *out, int stacks, int64_t *x, size_t maxx, size_t *nx,
                        int *have_totals, int64_t *wm_seen, int *have_wm, ch_fp *fp)
{
    *have_totals = *have_wm = 0;
    *nx = 0;
    for (int pass = 0; pass < 2; pass++) {
        ch_rd r = {(const unsigned char *)ans->p, (const unsigned char *)ans->p + ans->n, 0};
        size_t n = 0;
        while (rd_more(&r)) {
            uint8_t tag = rd_u8(&r);
            uint64_t key = rd_u64(&r);
            int64_t v[HS_STORE_MAX_VALUES];
            for (int i = 0; i < HS_STORE_MAX_VALUES; i++)
                v[i] = rd_i64(&r);
            uint64_t len = rd_varint(&r);
            if (r.bad || len > maxx || (uint64_t)(r.end - r.p) < len * 8)
                return -1;
            int64_t arr[16];
            for (uint64_t i = 0; i < len; i++)
                arr[i] = rd_i64(&r);
            if (tag == CH_ROW_STACK) {
                if (!stacks || len)
                    return -1;
                if (pass) {
                    out->rows[n].stack = key;
                    memcpy(out->rows[n].values, v, sizeof v);
                }
                n++;
            } else if (tag == CH_ROW_TOTALS && pass == 0) {
                if (*have_totals)
                    return -1;
                *have_totals = 1;
                out->n_profiles = (int64_t)key;
                memcpy(out->totals, v, sizeof v);
                memcpy(x, arr, len * sizeof *x);
                *nx = len;
            } else if (tag == CH_ROW_WM && pass == 0) {
                if (*have_wm)
                    return -1;
                *have_wm = 1;
                *wm_seen = v[0];
            } else if (tag == CH_ROW_DAY && pass == 0) {
                if (!fp)
                    return -1;
                fp_add(fp, key, (uint64_t)v[0]);
            } else if (tag > CH_ROW_DAY) {
                return -1;
            }
        }
        if (pass == 0) {
            if (!stacks)
                return 0;
            out->n_rows = n;
            out->rows = malloc((n ? n : 1) * sizeof *out->rows);
            if (!out->rows)
                return -2;
        }
    }
    return 0;
}

static int merge_request(hs_store *base, const hs_store_query *q, ch_sids *ids, hs_store_merged *out, char *err,
                         size_t errlen)
{
    ch_store *s = (ch_store *)base;
    if (need_service_type(q, err, errlen))
        return -1;
    memset(out, 0, sizeof *out);
    /* The watermark: the one the last merge saw, checked by this merge's
     * own request (its CH_ROW_WM row); read first only by the first. */
    int64_t wm;
    int wm_known = wm_cached(s, &wm);
    int rc = wm_known ? 0 : watermark(s, &wm, err, errlen);
    if (rc)
        return rc;
    /* The sample types: those of (service, type), which never change (put
     * refuses others; kept by kind_types once read): their count says
     * which value columns to sum. Unknown (no profile yet, or an error
     * that matters only when there are profiles): the stacks are asked
     * after the totals. */
    hs_store_types t;
    char terr[256];
    int trc = ch_type_info(base, q, &t, terr, sizeof terr);
    /* One request asks for the profiles (count, totals, time span), the
     * watermark, and the stacks of the selection the totals most likely
     * allow. Unless the selection is the exact one (ids, or ?rollup=0),
     * the totals also say whether any id may be stored twice among them
     * (count() against uniqExact(pid), the integer hash of the id, over
     * its profile rows; pids of different ids that collide only cost a
     * look at the copies): if so, the
     * copies to leave out are found (find_losers; with a version or label
     * filter simply the exact way) and the request made again without
     * them. When a rollup may answer, the profiles in its hours by both
     * tables; with a version or label filter, whether the series table may
     * be trusted (series_check). The stacks answered are used only when
     * the totals confirm the selection and the rollup they were read with
     * (else, rarely, they are asked again); a changed watermark redoes the
     * request with it. */
    hs_bytes b = {0}, ans = {0};
    uint64_t *losers = NULL;
    size_t n_losers = 0;
    int filtered = q->n_versions || q->n_labels, roll = 0, have_stacks = 0;
    ch_sel sel = q->n_ids || (filtered && !s->rollup) ? CH_CHOSEN : filtered ? CH_SERIES : CH_ALL;
    ch_roll r = {0};
    char *blk = NULL;
    /* (the totals of a CH_SERIES selection from the profiles table, the
     * profile rows' numbers alone ordered by series, unless it misses
     * rows: then from the profile rows of samples) */
    int narrow = 1;
    /* (whole days from the daily version rollup, unless it misses rows
     * there: then every hour from the hourly one) */
    int day_roll = 1;
    for (int pass = 0, wm_changes = 0;; pass++) {
        if (n_losers > CH_IN_CHUNK)
            sel = CH_CHOSEN;
        /* (trusted: the days' series tables are known complete, no count
         * to compare; else series_check in this request) */
        int trusted = sel == CH_SERIES && ids && ids->trusted;
        int probe = sel != CH_CHOSEN && pass == 0, check = sel == CH_SERIES && !trusted;
        roll = sel != CH_CHOSEN && n_losers == 0 && rollup_range(s, q, wm, day_roll, &r);
        int counted = roll && !(trusted && r.series); /* (the rollup's profiles counted by both) */
        int stacks = trc == 0;
        hs_bytes_printf(&b, "SELECT toUInt8(%d), count(), sum(v0), sum(v1), sum(v2), sum(v3), [min(start_ns), "
                       "max(start_ns + duration_ns)", CH_ROW_TOTALS);
        if (probe)
            hs_bytes_str(&b, ", toInt64(count() - uniqExact(pid))");
        if (counted) {
            /* (the profiles of the rollup's buckets: the range's whole
             * buckets, and the whole bucket at a complemented end,
             * counting those of its part outside the range) */
            int sub = roll_complements(q, wm, &r);
            int64_t rb0 = sub & CH_SUB_HEAD ? r.b0 - r.unit : r.b0, rb1 = sub & CH_SUB_TAIL ? r.b1 + r.unit : r.b1;
            hs_bytes_printf(&b, ", toInt64(countIf(start_ns >= %" PRId64, rb0);
            if (rb1)
                hs_bytes_printf(&b, " AND start_ns < %" PRId64, rb1);
            hs_bytes_str(&b, ")");
            for (int end = CH_SUB_HEAD; end <= CH_SUB_TAIL; end <<= 1) {
                if (!(sub & end))
                    continue;
                hs_store_query o = roll_outside(q, wm, &r, end);
                hs_bytes_printf(&b, " + (SELECT count() FROM %s.samples WHERE ", s->db);
                where_profiles(&b, &o, 0);
                where_sel(&b, s, &o, 0, sel, ids, NULL, 0);
                hs_bytes_str(&b, ")");
            }
            hs_bytes_str(&b, "), toInt64((SELECT sum(profiles)");
            from_buckets(&b, s, q, wm, &r, ids, rb0, rb1, 0);
            hs_bytes_str(&b, "))");
        }
        if (check)
            series_check(&b, s, q, wm);
        if (sel == CH_SERIES && narrow) {
            /* (the series' rows only, by the series id alone, as their
             * samples are: no string column read) */
            hs_bytes_printf(&b, "] FROM %s.profiles", s->db);
            if (!s->cluster) {
                hs_bytes_str(&b, " PREWHERE 1");
                where_sids(&b, s, q, wm, ids);
            }
            hs_bytes_str(&b, " WHERE ");
            where_rows(&b, q, wm, CH_NARROW);
            if (s->cluster)
                where_sids(&b, s, q, wm, ids);
        } else if (sel == CH_SERIES && !s->cluster) {
            hs_bytes_printf(&b, "] FROM %s.samples", s->db);
            /* (the series' rows first: ClickHouse then reads the other
             * columns of those rows only) */
            hs_bytes_str(&b, " PREWHERE 1");
            where_sids(&b, s, q, wm, ids);
            hs_bytes_str(&b, " WHERE ");
            where_profiles(&b, q, wm);
        } else {
            hs_bytes_printf(&b, "] FROM %s.samples WHERE ", s->db);
            where_profiles(&b, q, wm);
            where_sel(&b, s, q, wm, sel, ids, losers, n_losers);
        }
        hs_bytes_printf(&b, " UNION ALL SELECT toUInt8(%d), toUInt64(0), max(before_ns), toInt64(0), toInt64(0), "
                       "toInt64(0), emptyArrayInt64() FROM %s.retention", CH_ROW_WM, s->db);
        if (ids && ids->fp_check) {
            hs_bytes_str(&b, " UNION ALL ");
            day_rows(&b, s, q, wm,
                     "toUInt8(" CH_STR(CH_ROW_DAY_N) "), toUInt64(min_date), toInt64(sum(rows)), toInt64(0), "
                     "toInt64(0), toInt64(0), emptyArrayInt64()");
        }
        if (stacks) {
            hs_bytes_str(&b, " UNION ALL ");
            merge_stacks(&b, s, q, wm, sel, ids, losers, n_losers, roll, &r, t.n);
        }
        hs_bytes_str(&b, " FORMAT RowBinary");
        rc = run(s, &b, &ans, err, errlen);
        hs_store_merged_free(out);
        if (rc) {
            memset(out, 0, sizeof *out);
            free(losers);
            return rc;
        }
        memset(out, 0, sizeof *out);
        int64_t x[8], wm_seen = 0;
        size_t nx, want = 2 + (size_t)probe + 2 * (size_t)counted + 3 * (size_t)check;
        int have_totals, have_wm;
        ch_fp *fp = ids && ids->fp_check ? &ids->fp_seen : NULL;
        if (fp)
            *fp = (ch_fp){0};
        int mrc =
            merge_answer(&ans, out, stacks, x, sizeof x / sizeof *x, &nx, &have_totals, &wm_seen, &have_wm, fp);
        free(ans.p);
        ans = (hs_bytes){0};
        if (mrc || !have_totals || !have_wm || nx != want) {
            free(losers);
            hs_store_merged_free(out);
            memset(out, 0, sizeof *out);
            if (mrc == -2) {
                set_err(err, errlen, "out of memory");
                return -1;
            }
            return malformed(err, errlen, "merge");
        }
        if (wm_seen != wm) {
            /* (retention ran since: again with the new watermark, from
             * the start; it only grows, so this ends unless hosts keep
             * answering different ones) */
            wm_keep(s, wm_seen);
            if (++wm_changes > 8) {
                free(losers);
                hs_store_merged_free(out);
                memset(out, 0, sizeof *out);
                set_err(err, errlen, "clickhouse: the retention watermark kept changing during the merge");
                return HS_STORE_UNAVAILABLE;
            }
            wm = wm_seen;
            free(losers);
            losers = NULL;
            n_losers = 0;
            sel = q->n_ids || (filtered && !s->rollup) ? CH_CHOSEN : filtered ? CH_SERIES : CH_ALL;
            pass = -1;
            continue;
        }
        if (!wm_known) {
            wm_keep(s, wm);
            wm_known = 1;
        }
        out->min_start_ns = x[0];
        out->max_end_ns = x[1];
        size_t at = 2;
        uint64_t twice = probe ? (uint64_t)x[at++] : 0;
        uint64_t raw = counted ? (uint64_t)x[at] : 1, rolled = counted ? (uint64_t)x[at + 1] : 1;
        at += counted ? 2 : 0;
        uint64_t in_days = check ? (uint64_t)x[at] : 0, in_series = check ? (uint64_t)x[at + 1] : 0;
        uint64_t in_narrow = check ? (uint64_t)x[at + 2] : 0;
        /* The rollup only when it holds exactly the profiles the samples
         * hold in those hours: else (a failed view insert, a kind shared
         * by two services) the raw rows answer. */
        if (roll && r.days && raw != rolled) {
            day_roll = 0;
            pass = -1;
            continue;
        }
        int asked_roll = roll;
        roll = roll && raw > 0 && raw == rolled;
        if (roll && q->n_labels && !r.series) {
            /* (the hours from the first selected profile's to the last
             * one's, when the range is open at either end) */
            int64_t first = out->min_start_ns / CH_BUCKET_NS * CH_BUCKET_NS, start = r.b0 > first ? r.b0 : first;
            int64_t end = r.b1 ? r.b1 : (out->max_end_ns / CH_BUCKET_NS + 1) * CH_BUCKET_NS;
            int64_t hours = end - start > CH_BUCKET_NS ? (end - start) / CH_BUCKET_NS : 1;
            roll = raw >= (uint64_t)s->label_roll_min * (uint64_t)hours;
        }
        have_stacks = stacks && roll == asked_roll;
        if (check && in_days != in_series) {
            sel = CH_CHOSEN; /* the series table misses rows: the exact way */
            continue;
        }
        if (check && narrow && in_days != in_narrow) {
            /* (the profiles table misses rows: its totals and probe
             * from the samples instead, from the start) */
            narrow = 0;
            pass = -1;
            continue;
        }
        if (!twice)
            break;
        if (sel == CH_SERIES) {
            sel = CH_CHOSEN;
            continue;
        }
        rc = find_losers(s, q, wm, &losers, &n_losers, err, errlen);
        if (rc) {
            hs_store_merged_free(out);
            memset(out, 0, sizeof *out);
            return rc;
        }
        if (!n_losers)
            break; /* (pids that collide, not copies: the totals stand) */
    }
    if (trc && out->n_profiles > 0) {
        free(losers);
        hs_store_merged_free(out);
        memset(out, 0, sizeof *out);
        set_err(err, errlen, "%s", terr);
        return trc;
    }
    hs_store_row *rows = out->rows;
    size_t n_rows = out->n_rows;
    out->rows = NULL;
    out->n_rows = 0;
    if (trc == 0 && types_dup(&t, &out->types, &blk)) {
        free(losers);
        free(rows);
        memset(out, 0, sizeof *out);
        set_err(err, errlen, "out of memory");
        return -1;
    }
    out->owned = blk;
    if (out->n_profiles == 0) {
        free(losers);
        free(rows);
        memset(out->totals, 0, sizeof out->totals);
        out->min_start_ns = out->max_end_ns = 0;
        return 0;
    }
    if (have_stacks) {
        free(losers);
        out->rows = rows;
        out->n_rows = n_rows;
        return 0;
    }
    /* The stacks again: the totals chose another way than the one the
     * request read them with. */
    free(rows);
    merge_stacks(&b, s, q, wm, sel, ids, losers, n_losers, roll, &r, out->types.n);
    hs_bytes_str(&b, " FORMAT RowBinary");
    free(losers);
    rc = run(s, &b, &ans, err, errlen);
    if (rc) {
        hs_store_merged_free(out);
        return rc;
    }
    int64_t x[8], wm_seen;
    size_t nx;
    int have_totals, have_wm;
    hs_store_merged got = {0};
    int mrc = merge_answer(&ans, &got, 1, x, sizeof x / sizeof *x, &nx, &have_totals, &wm_seen, &have_wm, NULL);
    free(ans.p);
    if (mrc || have_totals || have_wm) {
        free(got.rows);
        hs_store_merged_free(out);
        if (mrc == -2) {
            set_err(err, errlen, "out of memory");
            return -1;
        }
        return malformed(err, errlen, "merge");
    }
    out->rows = got.rows;
    out->n_rows = got.n_rows;
    return 0;
}

/* Whether the series tables (series, profiles, rollup_series: filled by
 * views) hold exactly the profile rows of kind that samples holds in
 * each of the n days, samples holding rows[i] rows (of every kind) in
 * days[i] (read from system.parts BEFORE this call): 1 if so, 0 if not,
 * else an error. A (kind, day) found complete is remembered with that
 * row count; while samples still holds that many rows in the day nothing
 * was inserted into it since (rows are only added, or dropped with the
 * whole day), so its tables are still complete and no count is read
 * again: a merge of a rare series then reads only its own rows. Else one
 * request counts the profile rows of the days in the four tables, per
 * day: a view insert that failed (or rows stored before a table existed)
 * leaves a count short. A count read after rows[i] may include rows
 * inserted since; the day is then remembered with the older count and
 * counted again on the next merge. */
static int days_trusted(ch_store *s, uint64_t kind, const uint16_t *days, const uint64_t *rows, size_t n, char *err,
                        size_t errlen)
{
    uint16_t *todo = malloc((n ? n : 1) * sizeof *todo);
    uint64_t *todo_rows = malloc((n ? n : 1) * sizeof *todo_rows), (*cnt)[4] = calloc(n ? n : 1, sizeof *cnt);
    size_t nt = 0;
    int rc = 1;
    if (!todo || !todo_rows || !cnt) {
        set_err(err, errlen, "out of memory");
        rc = -1;
        goto out;
    }
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < s->n_trusted && !(s->trusted[k].kind == kind && s->trusted[k].day == days[i] &&
                                     s->trusted[k].rows == rows[i]))
            k++;
        if (k == s->n_trusted) {
            todo[nt] = days[i];
            todo_rows[nt++] = rows[i];
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (!nt)
        goto out;
    hs_bytes b = {0}, ans = {0}, in = {0};
    for (size_t i = 0; i < nt; i++) {
        hs_bytes_str(&in, i ? "," : "");
        buf_day(&in, todo[i]);
    }
    static const char *const counts[4][2] = {{"count()", "samples WHERE rowtype = 0 AND"},
                                             {"sum(profiles)", "series WHERE"},
                                             {"count()", "profiles WHERE"},
                                             {"sum(profiles)", "rollup_series WHERE rowtype = 0 AND"}};
    for (int t = 0; t < 4; t++)
        hs_bytes_printf(&b,
                   "%sSELECT toUInt8(%d), toUInt64(day), toUInt64(%s) FROM %s.%s kind = %" PRIu64
                   " AND day IN (%s) GROUP BY day",
                   t ? " UNION ALL " : "", t, counts[t][0], s->db, counts[t][1], kind, in.s ? in.s : "");
    hs_bytes_str(&b, " FORMAT RowBinary");
    if (in.oom)
        b.oom = 1;
    free(in.p);
    rc = run(s, &b, &ans, err, errlen);
    if (rc)
        goto out;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    while (rd_more(&r)) {
        uint8_t t = rd_u8(&r);
        uint64_t day = rd_u64(&r), c = rd_u64(&r);
        size_t i = 0;
        while (i < nt && todo[i] != day)
            i++;
        if (r.bad || t > 3 || i == nt) {
            free(ans.p);
            rc = malformed(err, errlen, "day counts");
            goto out;
        }
        cnt[i][t] = c;
    }
    free(ans.p);
    rc = 1;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < nt; i++) {
        if (cnt[i][0] != cnt[i][1] || cnt[i][0] != cnt[i][2] || cnt[i][0] != cnt[i][3]) {
            rc = 0;
            continue;
        }
        size_t k = 0;
        while (k < s->n_trusted && !(s->trusted[k].kind == kind && s->trusted[k].day == todo[i]))
            k++;
        if (k == CH_TRUSTED_MAX)
            k = s->n_trusted = 0; /* (full: start again) */
        if (k == s->n_trusted)
            s->n_trusted++;
        s->trusted[k].kind = kind;
        s->trusted[k].day = todo[i];
        s->trusted[k].rows = todo_rows[i];
    }
    pthread_mutex_unlock(&s->mu);
out:
    free(todo);
    free(todo_rows);
    free(cnt);
    return rc;
}

/* A merge (merge_request). With a version or label filter, the ids of
 * its series are looked up first (SELECT DISTINCT over the series table
 * of the range's days, from the watermark's or not: more days only list
 * more ids of the same version and labels) and, when at most CH_IN_CHUNK,
 * listed in the request rather than each of its parts asking the series
 * table again (each subquery is planned and run anew: ~2-4 ms each on
 * 18.16, most of a rare series' merge). On one server the same request
 * reads the samples' row count per day of the range (system.parts), and
 * when days_trusted finds every such day's series tables complete the
 * merge compares no counts at all (in a cluster, where system.parts is
 * each shard's own, it always does). */
static int ch_merge(hs_store *base, const hs_store_query *q, hs_store_merged *out, char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    if (!s->rollup || !q || !q->service || !q->type || q->n_ids || !(q->n_versions || q->n_labels))
        return merge_request(base, q, NULL, out, err, errlen);
    uint64_t kind = kind_of(q->service, q->type);
    int64_t wm;
    if (!wm_cached(s, &wm))
        wm = 0;
    hs_bytes b = {0}, ans = {0};
    hs_bytes_printf(&b, "SELECT toUInt8(0), sid, toUInt64(0) FROM (SELECT DISTINCT sid FROM %s.series WHERE kind = %" PRIu64,
               s->db, kind);
    where_days(&b, q, 0);
    where_attrs(&b, q);
    hs_bytes_printf(&b, " LIMIT %d)", CH_IN_CHUNK + 1);
    if (!s->cluster) {
        hs_bytes_str(&b, " UNION ALL ");
        day_rows(&b, s, q, wm, "toUInt8(1), toUInt64(min_date), toUInt64(sum(rows))");
    }
    hs_bytes_str(&b, " FORMAT RowBinary");
    if (b.oom) {
        free(b.p);
        memset(out, 0, sizeof *out);
        set_err(err, errlen, "out of memory");
        return -1;
    }
    /* A lookup made before with the same SQL (the same kind, filter and
     * days), on one server: its ids stand while samples holds the same
     * rows in those days (the series table only changes with them), which
     * the merge's own request reads again (fp_check). One request then. */
    ch_sids ids = {0};
    ch_fp fp = {0};
    int hit = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < CH_LOOKUPS && !s->cluster; i++) {
        ch_lookup *l = &s->lookups[i];
        if (!l->sql || strcmp(l->sql, b.s))
            continue;
        uint64_t *v = malloc((l->n ? l->n : 1) * sizeof *v);
        if (v) {
            memcpy(v, l->sids, l->n * sizeof *v);
            ids = (ch_sids){v, l->n, l->trusted, l->no_day0, 1, {0, 0}};
            fp = l->fp;
            hit = 1;
        }
        break;
    }
    pthread_mutex_unlock(&s->mu);
    if (hit) {
        int rc = merge_request(base, q, &ids, out, err, errlen);
        free((uint64_t *)ids.v);
        if (rc || (ids.fp_seen.n == fp.n && ids.fp_seen.sum == fp.sum)) {
            free(b.p);
            return rc;
        }
        hs_store_merged_free(out); /* (samples changed in those days: look up again) */
    }
    char *sql = strdup(b.s);
    int rc = run(s, &b, &ans, err, errlen);
    if (rc || !sql) {
        free(sql);
        free(ans.p);
        memset(out, 0, sizeof *out);
        if (rc)
            return rc;
        set_err(err, errlen, "out of memory");
        return -1;
    }
    size_t n = 0, nd = 0, rows = ans.n / 17;
    uint64_t *v = malloc((rows ? rows : 1) * sizeof *v), *day_rows_n = malloc((rows ? rows : 1) * sizeof *day_rows_n);
    uint16_t *days = malloc((rows ? rows : 1) * sizeof *days);
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    int day0 = 0;
    fp = (ch_fp){0};
    while (v && day_rows_n && days && rd_more(&r)) {
        uint8_t t = rd_u8(&r);
        uint64_t a = rd_u64(&r), c = rd_u64(&r);
        if (t == 0) {
            v[n++] = a;
        } else if (t == 1 && a <= 65535) {
            days[nd] = (uint16_t)a;
            day_rows_n[nd++] = c;
            day0 |= a == 0;
            fp_add(&fp, a, c);
        } else {
            r.bad = 1;
        }
    }
    free(ans.p);
    int trusted = -1;
    if (!v || !day_rows_n || !days)
        set_err(err, errlen, "out of memory");
    else if (r.bad || ans.n % 17)
        malformed(err, errlen, "series ids");
    else
        trusted = s->cluster ? 0 : days_trusted(s, kind, days, day_rows_n, nd, err, errlen);
    free(day_rows_n);
    free(days);
    if (trusted < 0) {
        free(v);
        free(sql);
        memset(out, 0, sizeof *out);
        return trusted;
    }
    ids = (ch_sids){v, n, trusted, !s->cluster && !day0, 0, {0, 0}};
    if (!s->cluster && n <= CH_IN_CHUNK) {
        /* (kept for the next merge with this lookup, replacing its
         * entry or the oldest) */
        uint64_t *keep = malloc((n ? n : 1) * sizeof *keep);
        if (keep) {
            memcpy(keep, v, n * sizeof *keep);
            pthread_mutex_lock(&s->mu);
            size_t k = 0;
            while (k < CH_LOOKUPS && !(s->lookups[k].sql && !strcmp(s->lookups[k].sql, sql)))
                k++;
            if (k == CH_LOOKUPS)
                k = s->next_lookup++ % CH_LOOKUPS;
            ch_lookup *l = &s->lookups[k];
            free(l->sql);
            free(l->sids);
            *l = (ch_lookup){sql, keep, n, fp, trusted, ids.no_day0};
            sql = NULL;
            pthread_mutex_unlock(&s->mu);
        }
    }
    free(sql);
    /* (many ids: the subqueries instead) */
    rc = merge_request(base, q, n <= CH_IN_CHUNK ? &ids : NULL, out, err, errlen);
    free(v);
    return rc;
}

/* ---- stacks ---- */

typedef struct {
    uint64_t hash;
    const unsigned char *data;
    size_t len;
} ch_found;

static int cmp_found(const void *a, const void *b)
{
    const ch_found *x = a, *y = b;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* fn is called once per element of hashes whose record is stored (a hash
 * asked twice is answered twice), in the order asked. */
static int ch_get_stacks(hs_store *base, const uint64_t *hashes, size_t n,
                         void (*fn)(void *arg, uint64_t hash, const void *data, size_t len), void *arg, char *err,
                         size_t errlen)
{
    ch_store *s = (ch_store *)base;
    uint64_t *ask = malloc((n < CH_IN_CHUNK ? n : CH_IN_CHUNK) * sizeof *ask + 1);
    ch_found *found = malloc((n < CH_IN_CHUNK ? n : CH_IN_CHUNK) * sizeof *found + 1);
    int rc = 0;
    if (!ask || !found) {
        set_err(err, errlen, "out of memory");
        rc = -1;
    }
    for (size_t at = 0; rc == 0 && at < n; at += CH_IN_CHUNK) {
        size_t m = n - at < CH_IN_CHUNK ? n - at : CH_IN_CHUNK, nask = 0, nf = 0;
        memcpy(ask, hashes + at, m * sizeof *ask);
        qsort(ask, m, sizeof *ask, cmp_u64);
        for (size_t i = 0; i < m; i++)
            if (!i || ask[i] != ask[i - 1])
                ask[nask++] = ask[i];
        hs_bytes b = {0}, ans = {0};
        hs_bytes_printf(&b, "SELECT hash, any(record) FROM %s.stacks WHERE hash IN (", s->db);
        for (size_t i = 0; i < nask; i++)
            hs_bytes_printf(&b, "%s%" PRIu64, i ? "," : "", ask[i]);
        hs_bytes_str(&b, ") GROUP BY hash FORMAT RowBinary");
        rc = run(s, &b, &ans, err, errlen);
        if (rc)
            break;
        ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
        while (rd_more(&r) && nf < nask) {
            found[nf].hash = rd_u64(&r);
            found[nf].data = rd_bytes(&r, &found[nf].len);
            nf++;
        }
        if (r.bad || rd_more(&r)) {
            free(ans.p);
            rc = malformed(err, errlen, "stacks");
            break;
        }
        qsort(found, nf, sizeof *found, cmp_found);
        for (size_t i = 0; i < m; i++) {
            ch_found key = {.hash = hashes[at + i]};
            const ch_found *f = bsearch(&key, found, nf, sizeof *found, cmp_found);
            if (f)
                fn(arg, f->hash, f->data, f->len);
        }
        free(ans.p);
    }
    free(ask);
    free(found);
    return rc;
}

/* ---- series ---- */

/* The rows of a series answer (RowBinary: the tag, bucket, count, four
 * sums): a point (CH_PT_POINT), the duplicate probe (CH_PT_PROBE: its
 * count, the profile rows beyond one per pid), the watermark (CH_PT_WM,
 * in the first sum). */
enum { CH_PT_POINT, CH_PT_PROBE, CH_PT_WM };

static int cmp_point(const void *a, const void *b)
{
    const hs_store_point *x = a, *y = b;
    return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

/* The profiles by start time: one GROUP BY of the selection's profile
 * rows by bucket, in one request with the watermark (the one the last
 * merge or series saw, as ch_merge) and, unless the selection is the exact
 * one (?rollup=0), the duplicate probe of ch_merge instead of choosing a
 * copy per id (a GROUP BY of the string id over every profile row): with
 * copies among them, the request again without the losers (find_losers),
 * or the exact way when there are too many. */
static int ch_series(hs_store *base, const hs_store_query *q, int64_t step_ns, hs_store_point **out, size_t *n,
                     char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    *out = NULL;
    *n = 0;
    if (need_service_type(q, err, errlen))
        return -1;
    int64_t wm;
    int wm_known = wm_cached(s, &wm);
    int rc = wm_known ? 0 : watermark(s, &wm, err, errlen);
    if (rc)
        return rc;
    int exact = !s->rollup;
    uint64_t *losers = NULL;
    size_t n_losers = 0;
    hs_store_point *pts = NULL;
    size_t m = 0;
    for (int pass = 0, wm_changes = 0;; pass++) {
        if (n_losers > CH_IN_CHUNK)
            exact = 1;
        int probe = !exact && pass == 0;
        hs_bytes b = {0}, ans = {0};
        hs_bytes_printf(&b,
                   "SELECT toUInt8(%d), intDiv(start_ns - (%" PRId64 "), %" PRId64 ") AS bucket, count(), sum(v0), "
                   "sum(v1), sum(v2), sum(v3) FROM %s.samples WHERE ",
                   CH_PT_POINT, q->from_ns, step_ns, s->db);
        where_profiles(&b, q, wm);
        if (exact)
            where_chosen(&b, s, q, wm);
        else
            where_not_losers(&b, losers, n_losers);
        hs_bytes_str(&b, " GROUP BY bucket");
        if (probe) {
            hs_bytes_printf(&b, " UNION ALL SELECT toUInt8(%d), toInt64(0), toUInt64(count() - uniqExact(pid)), "
                           "toInt64(0), toInt64(0), toInt64(0), toInt64(0) FROM %s.samples WHERE ",
                       CH_PT_PROBE, s->db);
            where_profiles(&b, q, wm);
        }
        hs_bytes_printf(&b, " UNION ALL SELECT toUInt8(%d), toInt64(0), toUInt64(0), max(before_ns), toInt64(0), "
                       "toInt64(0), toInt64(0) FROM %s.retention FORMAT RowBinary",
                   CH_PT_WM, s->db);
        rc = run(s, &b, &ans, err, errlen);
        if (rc)
            break;
        size_t row = 1 + 8 + 8 + 8 * HS_STORE_MAX_VALUES, rows = ans.n / row;
        free(pts);
        pts = malloc((rows ? rows : 1) * sizeof *pts);
        m = 0;
        if (!pts) {
            free(ans.p);
            set_err(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
        int have_probe = 0, have_wm = 0;
        uint64_t twice = 0;
        int64_t wm_seen = 0;
        for (size_t i = 0; i < rows && !r.bad; i++) {
            uint8_t tag = rd_u8(&r);
            int64_t bucket = rd_i64(&r);
            uint64_t count = rd_u64(&r);
            int64_t v[HS_STORE_MAX_VALUES];
            for (int k = 0; k < HS_STORE_MAX_VALUES; k++)
                v[k] = rd_i64(&r);
            if (tag == CH_PT_POINT) {
                pts[m].t_ns = q->from_ns + bucket * step_ns;
                pts[m].n_profiles = (int64_t)count;
                memcpy(pts[m].totals, v, sizeof v);
                m++;
            } else if (tag == CH_PT_PROBE && !have_probe) {
                have_probe = 1;
                twice = count;
            } else if (tag == CH_PT_WM && !have_wm) {
                have_wm = 1;
                wm_seen = v[0];
            } else {
                r.bad = 1;
            }
        }
        int bad = r.bad || ans.n % row || have_probe != probe || !have_wm;
        free(ans.p);
        if (bad) {
            rc = malformed(err, errlen, "series");
            break;
        }
        if (wm_seen != wm) {
            /* (retention ran since: again with the new watermark, as
             * ch_merge) */
            wm_keep(s, wm_seen);
            if (++wm_changes > 8) {
                set_err(err, errlen, "clickhouse: the retention watermark kept changing during the series");
                rc = HS_STORE_UNAVAILABLE;
                break;
            }
            wm = wm_seen;
            free(losers);
            losers = NULL;
            n_losers = 0;
            exact = !s->rollup;
            pass = -1;
            continue;
        }
        if (!wm_known) {
            wm_keep(s, wm);
            wm_known = 1;
        }
        if (!twice)
            break;
        rc = find_losers(s, q, wm, &losers, &n_losers, err, errlen);
        if (rc || !n_losers)
            break; /* (!n_losers: pids that collide, not copies) */
    }
    free(losers);
    if (rc) {
        free(pts);
        return rc;
    }
    qsort(pts, m, sizeof *pts, cmp_point);
    *out = pts;
    *n = m;
    return 0;
}

/* ---- profile rows ---- */

static int ch_profiles(hs_store *base, const hs_store_query *q, size_t limit, hs_store_profile_row **out,
                       size_t *n, char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    *out = NULL;
    *n = 0;
    if (need_service_type(q, err, errlen))
        return -1;
    int64_t wm;
    int rc = watermark(s, &wm, err, errlen);
    if (rc)
        return rc;
    hs_bytes b = {0}, ans = {0};
    hs_bytes_printf(&b, "SELECT id, version, start_ns, duration_ns, v0, v1, v2, v3 FROM %s.samples WHERE ", s->db);
    where_profiles(&b, q, wm);
    where_chosen(&b, s, q, wm);
    hs_bytes_str(&b, " ORDER BY start_ns, id");
    if (limit)
        hs_bytes_printf(&b, " LIMIT %zu", limit);
    hs_bytes_str(&b, " FORMAT RowBinary");
    rc = run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    hs_store_profile_row *rows = NULL;
    size_t cap = 0, m = 0;
    while (rd_more(&r)) {
        if (m == cap) {
            cap = cap ? cap * 2 : 64;
            hs_store_profile_row *nr = realloc(rows, cap * sizeof *nr);
            if (!nr) {
                r.bad = 1;
                break;
            }
            rows = nr;
        }
        hs_store_profile_row *row = &rows[m];
        memset(row, 0, sizeof *row);
        size_t len;
        const unsigned char *id = rd_bytes(&r, &len);
        if (r.bad || len >= sizeof row->id) {
            r.bad = 1;
            break;
        }
        memcpy(row->id, id, len);
        row->id[len] = 0;
        row->version = rd_strdup(&r);
        if (!row->version)
            break;
        m++;
        row->start_ns = rd_i64(&r);
        row->duration_ns = rd_i64(&r);
        for (int v = 0; v < HS_STORE_MAX_VALUES; v++)
            row->totals[v] = rd_i64(&r);
    }
    free(ans.p);
    if (r.bad) {
        hs_store_profile_rows_free(rows, m);
        return malformed(err, errlen, "profiles");
    }
    *out = rows;
    *n = m;
    return 0;
}

/* ---- retention ---- */

/* "SELECT table, partition_id FROM system.parts ..." (RowBinary): the
 * active partitions of the day-partitioned tables (samples too when
 * with_samples) of the days before `day`, then tail (a GROUP BY). A
 * Date partition's id is YYYYMMDD. */
static void day_parts(hs_bytes *b, const ch_store *s, int with_samples, uint16_t day, const char *tail)
{
    static const char *const tables[] = {"stacks", "rollup", "rollup_version", "rollup_label", "series",
                                         "rollup_series", "profiles", "rollup_version_day"};
    time_t t = (time_t)day * 86400;
    struct tm tm;
    gmtime_r(&t, &tm);
    hs_bytes_printf(b, "SELECT table, partition_id FROM system.parts WHERE active AND database = '%s' AND table IN (",
               s->db);
    if (with_samples)
        hs_bytes_printf(b, "'samples%s', ", s->local);
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
        hs_bytes_printf(b, "%s'%s%s'", i ? ", " : "", tables[i], s->local);
    hs_bytes_printf(b, ") AND partition_id < '%04d%02d%02d'%s FORMAT RowBinary", tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tail);
}

/* On host h, "VERB db.table ACTION 'partition'" for every (table,
 * partition) the query parts (day_parts) lists. After a failure the
 * others are tried when keep_going, and the first error is returned. */
static int each_partition(ch_store *s, size_t h, const hs_bytes *parts, const char *verb, const char *action,
                          int keep_going, char *err, size_t errlen)
{
    if (parts->oom) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    int cf;
    hs_bytes ans = {0};
    int first = ch_http(s, h, CH_QUERY, parts->s, NULL, "", &ans, &cf, err, errlen);
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    while (!first && rd_more(&r)) {
        size_t tl, pl;
        const unsigned char *table = rd_bytes(&r, &tl), *part = rd_bytes(&r, &pl);
        if (r.bad) {
            first = malformed(err, errlen, "partitions");
            break;
        }
        char sql[256], e[512];
        snprintf(sql, sizeof sql, "%s %s.%.*s %s '%.*s'", verb, s->db, (int)tl, (const char *)table, action,
                 (int)pl, (const char *)part);
        int rc = ch_http(s, h, CH_QUERY, sql, NULL, "", NULL, &cf, e, sizeof e);
        if (rc) {
            first = rc;
            set_err(err, errlen, "%s", e);
            if (!keep_going)
                break;
        }
    }
    free(ans.p);
    return first;
}

/* The partitions of the days before before_ns' day, dropped on every host
 * (stopping at the first failure), after the watermark is recorded. */
static int drop_days(ch_store *s, int64_t before_ns, char *err, size_t errlen)
{
    char mark[160];
    snprintf(mark, sizeof mark, "INSERT INTO %s.retention VALUES (%" PRId64 ")", s->db, before_ns);
    hs_bytes parts = {0};
    day_parts(&parts, s, 1, day_of(before_ns), " GROUP BY table, partition_id");
    int rc = 0;
    for (size_t h = 0; h < s->n_hosts && rc == 0; h++) {
        int cf;
        rc = ch_http(s, h, CH_QUERY, mark, NULL, "", NULL, &cf, err, errlen);
        if (rc == 0)
            rc = each_partition(s, h, &parts, "ALTER TABLE", "DROP PARTITION ID", 0, err, errlen);
    }
    free(parts.p);
    return rc;
}

/* A partition of more than this many bytes is left to the background
 * merges by compact_days (its merge could outlast the request timeout). */
#define CH_COMPACT_MAX (2LL << 30)

/* Finished days compacted, on every host: each partition of a day before
 * today (UTC) that holds more than one part in the tables merges read
 * whole (the rollups, series, profiles, stacks; not samples, the bulk,
 * whose reads pick an hour and series by its key) is merged into one
 * (OPTIMIZE ... PARTITION: ClickHouse's background merges leave a day
 * of a fleet in several parts for good, and a merge that selects a few
 * series, such as one instance's, reads granules from each; ~2x faster
 * on bench's 1 000 000 profiles). Once per partition: a merged one is
 * not picked again until a late profile adds a part. A partition another
 * instance or a background merge is merging is skipped (ClickHouse does
 * nothing then) and picked next time; one of more than CH_COMPACT_MAX
 * bytes is never picked. The first error is returned after the others
 * were tried. */
static int compact_days(ch_store *s, char *err, size_t errlen)
{
    char tail[128];
    snprintf(tail, sizeof tail,
             " GROUP BY table, partition_id HAVING count() > 1 AND sum(bytes_on_disk) <= %lld", CH_COMPACT_MAX);
    hs_bytes parts = {0};
    day_parts(&parts, s, 0, day_of(hs_realtime_ns()), tail);
    int first = 0;
    for (size_t h = 0; h < s->n_hosts; h++) {
        char e[512];
        int rc = each_partition(s, h, &parts, "OPTIMIZE TABLE", "PARTITION ID", 1, first ? e : err,
                                first ? sizeof e : errlen);
        if (rc && !first)
            first = rc;
    }
    free(parts.p);
    return first;
}

/* Retention must stay cheap for a fleet, where one day is a lot of data and
 * `hotspur serve` retains every hour: whole days before the boundary are
 * dropped as partitions (no data rewritten), and the boundary day's older
 * profiles are hidden at once by a watermark every query reads (the
 * retention table) until their partition is dropped the next day. Mutations
 * (ALTER TABLE ... DELETE) would rewrite the whole boundary day every hour.
 * Then the finished days are compacted (compact_days), also when there is
 * nothing to drop (before_ns <= 0). */
static int ch_retain(hs_store *base, int64_t before_ns, char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    int rc = ch_schema(s, err, errlen);
    if (rc == 0 && before_ns > 0)
        rc = drop_days(s, before_ns, err, errlen);
    return rc ? rc : compact_days(s, err, errlen);
}

/* ---- stats ---- */

static int ch_stats(hs_store *base, hs_store_stats *out, char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    memset(out, 0, sizeof *out);
    hs_bytes b = {0}, ans = {0};
    hs_bytes_printf(&b,
               "SELECT (SELECT uniqExact(id) FROM %s.samples WHERE rowtype = 0 AND start_ns >= (SELECT max(before_ns) "
               "FROM %s.retention)), (SELECT count() FROM %s.samples WHERE rowtype = 1 AND start_ns >= (SELECT "
               "max(before_ns) FROM %s.retention) AND ins IN (SELECT min(ins) FROM %s.samples%s WHERE rowtype = 0 "
               "GROUP BY id)), (SELECT uniqExact(hash) FROM %s.stacks) FORMAT RowBinary",
               s->db, s->db, s->db, s->db, s->db, s->local, s->db);
    int rc = run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    out->profiles = (int64_t)rd_u64(&r);
    out->samples = (int64_t)rd_u64(&r);
    out->stacks = (int64_t)rd_u64(&r);
    free(ans.p);
    if (r.bad)
        return malformed(err, errlen, "stats");
    /* Bytes on disk: every host's own parts. */
    hs_bytes_str(&b, "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = ");
    buf_quote(&b, s->db);
    hs_bytes_str(&b, " FORMAT RowBinary");
    if (b.oom) {
        free(b.p);
        set_err(err, errlen, "out of memory");
        return -1;
    }
    for (size_t h = 0; h < s->n_hosts && rc == 0; h++) {
        int cf;
        rc = ch_http(s, h, CH_QUERY, b.s, NULL, "", &ans, &cf, err, errlen);
        if (rc)
            break;
        r = (ch_rd){(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
        out->bytes += (int64_t)rd_u64(&r);
        free(ans.p);
        ans = (hs_bytes){0};
        if (r.bad)
            rc = malformed(err, errlen, "disk usage");
    }
    free(b.p);
    return rc;
}

static const hs_store_ops ch_ops = {
    .name = "clickhouse",
    .batching = {.max_profiles = CH_BATCH_PROFILES, .wait_ms = CH_BATCH_WAIT_MS, .writers = CH_BATCH_WRITERS,
                 .linger = 1, .min_parallel = CH_BATCH_MIN_PARALLEL},
    .close = ch_close,
    .put = ch_put,
    .strings = ch_strings,
    .type_info = ch_type_info,
    .merge = ch_merge,
    .get_stacks = ch_get_stacks,
    .series = ch_series,
    .profiles = ch_profiles,
    .retain = ch_retain,
    .stats = ch_stats,
};
