/* clickhouse.c — the fleet store: ClickHouse over its HTTP interface. This
 * file opens and closes it, drops and compacts old days (retention), and
 * reports its size; the other jobs have their files: clickhouse_http.c (the
 * curl pool, one request), clickhouse_schema.c (tables, the URL),
 * clickhouse_insert.c (put), clickhouse_query.c (selections, listings,
 * stacks, series), clickhouse_merge.c (merge); what they share is in
 * clickhouse_internal.h.
 *
 * URL: clickhouse://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/DB[?OPTIONS]
 *   cluster=NAME        a cluster of remote_servers: local tables on every
 *                       shard, Distributed tables over them. List one HTTP
 *                       address per shard (DDL and retention run on each;
 *                       inserts and queries go to any of them).
 *   timeout=SECONDS     total time per request (default 30)
 *   rollup=0|1          may merges read the rollup (default 1)
 *   rollup_delay=S      seconds the rollups may lag the samples (default
 *                       10; 0: filled within each INSERT; every instance
 *                       on one database must give the same)
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
 *            MATERIALIZED VIEW over every block the rollups' feed hands
 *            over (samples_feed, below; folded within the block;
 *            background merges fold the rest, and reads always sum). A merge with no version, label or id
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
 *   samples_feed  Null, with samples_feed_buf (Buffer) and samples_feed_mv
 *            (a view of samples into the buffer): the rollups' views read
 *            this feed, handed over in large blocks every rollup_delay
 *            seconds (URL option, default CH_ROLL_DELAY; 0: within each
 *            INSERT), at retention and at close after a put, so an INSERT
 *            makes no part of the five rollups (ch_schema says more).
 *            Until then merges find the rollups' counts short and read
 *            the samples.
 *   retention (before_ns) Log: the ch_watermark (see ch_retain).
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
 * in one request with its totals, checks and the ch_watermark (ch_merge);
 * series bucket the profile rows with intDiv in SQL, in one request with
 * the watermark and the merges' duplicate probe (ch_series; the copy per
 * id chosen by id only with rollup=0 or many copies); listings are
 * SELECT DISTINCT; all
 * answers come back as RowBinary. Retention drops whole day partitions
 * (ALTER TABLE ... DROP PARTITION ID) and hides the boundary day's older
 * profiles behind a ch_watermark (the retention table, one per host, read by
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
#include "store/clickhouse_internal.h"

static const hs_store_ops ch_ops;

static void ch_close(hs_store *base)
{
    ch_store *s = (ch_store *)base;
    if (s->put_any) {
        /* (the rollups complete when a server stops: best effort) */
        char err[256];
        ch_flush_rollups(s, err, sizeof err);
    }
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
        hs_err(err, errlen, "clickhouse: curl_global_init failed");
        return NULL;
    }
    ch_store *s = calloc(1, sizeof *s);
    if (!s) {
        curl_global_cleanup();
        hs_err(err, errlen, "out of memory");
        return NULL;
    }
    s->base.ops = &ch_ops;
    s->connect_ms = 2000;
    s->timeout_ms = 30000;
    s->rollup = 1;
    s->label_roll_min = CH_LABEL_ROLL_MIN;
    s->roll_delay = CH_ROLL_DELAY;
    if (pthread_mutex_init(&s->mu, NULL)) {
        free(s);
        curl_global_cleanup();
        hs_err(err, errlen, "pthread_mutex_init failed");
        return NULL;
    }
    if (hs_idmap_init(&s->known, 4096) < 0) {
        hs_err(err, errlen, "out of memory");
        ch_close(&s->base);
        return NULL;
    }
    if (ch_parse_url(s, url, err, errlen)) {
        ch_close(&s->base);
        return NULL;
    }
    if (s->n_hosts > 1 && !s->cluster) {
        hs_err(err, errlen, "clickhouse URL '%s': several hosts are the shards of a cluster: add ?cluster=NAME", url);
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
        hs_err(err, errlen, "out of memory");
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
            first = ch_malformed(err, errlen, "partitions");
            break;
        }
        char sql[256], e[512];
        snprintf(sql, sizeof sql, "%s %s.%.*s %s '%.*s'", verb, s->db, (int)tl, (const char *)table, action,
                 (int)pl, (const char *)part);
        int rc = ch_http(s, h, CH_QUERY, sql, NULL, "", NULL, &cf, e, sizeof e);
        if (rc) {
            first = rc;
            hs_err(err, errlen, "%s", e);
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
    day_parts(&parts, s, 1, ch_day_of(before_ns), " GROUP BY table, partition_id");
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
    day_parts(&parts, s, 0, ch_day_of(hs_realtime_ns()), tail);
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
    if (rc == 0) /* (before a day is dropped, and before compaction merges its parts) */
        rc = ch_flush_rollups(s, err, errlen);
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
    int rc = ch_run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    out->profiles = (int64_t)rd_u64(&r);
    out->samples = (int64_t)rd_u64(&r);
    out->stacks = (int64_t)rd_u64(&r);
    free(ans.p);
    if (r.bad)
        return ch_malformed(err, errlen, "stats");
    /* Bytes on disk: every host's own parts. */
    hs_bytes_str(&b, "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = ");
    buf_quote(&b, s->db);
    hs_bytes_str(&b, " FORMAT RowBinary");
    if (b.oom) {
        free(b.p);
        hs_err(err, errlen, "out of memory");
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
            rc = ch_malformed(err, errlen, "disk usage");
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
