/* clickhouse_schema.c — the ClickHouse store's tables (created or checked
 * at open and on the first call that reaches ClickHouse) and the parsing of
 * its clickhouse:// URL. */
#define _GNU_SOURCE /* asprintf */
#include "store/clickhouse_internal.h"

/* ---- schema ---- */

/* The DDL of a rollup NAME keyed by (kind, bucket, rowtype, [cols,] stack)
 * (cols: "" or columns of samples, or of its ARRAY JOIN aj; defs: their
 * declarations; opts: "" or its SETTINGS) and of its materialized view
 * NAME_mv over the rows of the feed (ch_schema) that meet cond (*tbl,
 * *mv: malloc'd, or NULL on out of memory). */
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
                     "sum(v0) AS v0, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM %s.samples_feed%s%s "
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
        hs_err(err, errlen, "clickhouse: out of memory");
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
            rc = ch_malformed(err, errlen, "schema");
        } else if (n != 1) {
            hs_err(err, errlen,
                    "clickhouse %s:%d: database %s was created by an older hotspur (its samples table has no "
                    "series id): give this version a new database (docs/fleet.md, \"An existing database\")",
                    s->hosts[h].host, s->hosts[h].port, s->db);
            rc = -1;
        }
    }
    free(q.p);
    return rc;
}

/* Host h's table NAME as create (its DDL) makes it, when system.tables
 * holds its definition with the texts n1 and n2 in it: created when
 * missing, dropped and created again when its definition lacks either
 * (18.16 cannot ALTER a materialized view or a Buffer's parameters), only
 * dropped when create is NULL (no label rollup). While a rollup's view is
 * missing or of another definition its hours' counts of profiles differ
 * from the samples', so merges read the samples there. */
static int replace_table(ch_store *s, size_t h, const char *name, const char *create, const char *n1, const char *n2,
                         char *err, size_t errlen)
{
    hs_bytes q = {0}, ans = {0}, drop = {0};
    hs_bytes_str(&q, "SELECT count(), countIf(position(create_table_query, ");
    buf_quote(&q, n1);
    hs_bytes_str(&q, ") > 0 AND position(create_table_query, ");
    buf_quote(&q, n2);
    hs_bytes_str(&q, ") > 0) FROM system.tables WHERE database = ");
    buf_quote(&q, s->db);
    hs_bytes_printf(&q, " AND name = '%s%s' FORMAT RowBinary", name, s->local);
    hs_bytes_printf(&drop, "DROP TABLE IF EXISTS %s.%s%s", s->db, name, s->local);
    int cf, rc = -1;
    if (q.oom || drop.oom) {
        hs_err(err, errlen, "clickhouse: out of memory");
        goto out;
    }
    rc = ch_http(s, h, CH_QUERY, q.s, NULL, "", &ans, &cf, err, errlen);
    if (rc)
        goto out;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    uint64_t exists = rd_u64(&r), same = rd_u64(&r);
    if (r.bad) {
        rc = ch_malformed(err, errlen, name);
        goto out;
    }
    if (exists && (!create || !same))
        rc = ch_http(s, h, CH_QUERY, drop.s, NULL, "", NULL, &cf, err, errlen);
    if (rc == 0 && create && (!exists || !same))
        rc = ch_http(s, h, CH_QUERY, create, NULL, "", NULL, &cf, err, errlen);
out:
    free(q.p);
    free(ans.p);
    free(drop.p);
    return rc;
}

int ch_flush_rollups(ch_store *s, char *err, size_t errlen)
{
    char sql[256];
    snprintf(sql, sizeof sql, "OPTIMIZE TABLE %s.samples_feed_buf%s", s->db, s->local);
    return ch_each(s, sql, err, errlen);
}

int ch_schema(ch_store *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->mu);
    int ok = s->schema_ok;
    pthread_mutex_unlock(&s->mu);
    if (ok)
        return 0;
    const char *L = s->local, *db = s->db;
    int rc = 0;
    enum { N_DDL = 21, N_BASE = 4 /* created before the schema check */ };
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
     * replace_table finds in the view's definition). */
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
    /* The feed: the rollups' views read the rows of samples not as each
     * INSERT makes them but in large blocks, so an INSERT makes a part of
     * samples (and of series and profiles) only, not one of each rollup
     * too (most of ClickHouse's work per profile: docs/BENCHMARKS.md,
     * "Server ingest over HTTP: ClickHouse"). A view copies the columns
     * they read of every row into a Buffer table, which hands them to
     * samples_feed (Null: it stores nothing, its views fill the rollups)
     * roll_delay seconds after its first row, or at 1 000 000 rows or
     * 256 MiB; ch_flush_rollups hands them over at once. With roll_delay
     * 0 every block goes straight through (the rollups filled within the
     * INSERT). A Buffer is memory: what it held when ClickHouse died is
     * missing from the rollups, whose counts then differ from the
     * samples' there, so merges read the samples (ClickHouse flushes it
     * when it stops). */
    ok_ddl[18] = asprintf(&owned[18],
                          "CREATE TABLE IF NOT EXISTS %s.samples_feed%s (day Date, rowtype UInt8, kind UInt64, "
                          "start_ns Int64, stack UInt64, v0 Int64, v1 Int64, v2 Int64, v3 Int64, version String, "
                          "label_keys Array(String), label_values Array(String), sid UInt64) ENGINE = Null",
                          db, L);
    long dly = s->roll_delay, rows = dly ? CH_FEED_ROWS : 0, bytes = dly ? CH_FEED_BYTES : 0;
    char buffer_args[160];
    snprintf(buffer_args, sizeof buffer_args, ", 1, %ld, %ld, %ld, %ld, %ld, %ld)", dly, dly, rows, rows, bytes, bytes);
    ok_ddl[19] = asprintf(&owned[19], "CREATE TABLE %s.samples_feed_buf%s AS %s.samples_feed%s ENGINE = Buffer(%s, "
                          "samples_feed%s%s", db, L, db, L, db, L, buffer_args);
    ok_ddl[20] = asprintf(&owned[20],
                          "CREATE MATERIALIZED VIEW IF NOT EXISTS %s.samples_feed_mv%s TO %s.samples_feed_buf%s AS "
                          "SELECT day, rowtype, kind, start_ns, stack, v0, v1, v2, v3, version, label_keys, "
                          "label_values, sid FROM %s.samples%s WHERE start_ns >= 0",
                          db, L, db, L, db, L);
    for (int i = 0; i < N_DDL; i++) {
        if (ok_ddl[i] < 0)
            owned[i] = NULL; /* (asprintf leaves it undefined) */
        ddl[i] = owned[i];
        if (!ddl[i]) {
            hs_err(err, errlen, "clickhouse: out of memory");
            rc = -1;
            goto out;
        }
    }
    for (int i = 0; i < N_BASE && rc == 0; i++)
        rc = ch_each(s, ddl[i], err, errlen);
    if (rc == 0)
        rc = schema_current(s, err, errlen);
    /* (the tables and the views of series and profiles, then the feed,
     * then the rollups' views: reading the feed, created or, in a
     * database an older hotspur made, where they read samples, replaced) */
    static const unsigned char made_here[N_DDL] = {[4] = 1, [6] = 1, [8] = 1, [9] = 1, [10] = 1, [12] = 1,
                                                   [14] = 1, [15] = 1, [16] = 1, [18] = 1};
    for (int i = N_BASE; i < N_DDL && rc == 0; i++)
        if (made_here[i])
            rc = ch_each(s, ddl[i], err, errlen);
    for (size_t h = 0; h < s->n_hosts && rc == 0; h++)
        rc = replace_table(s, h, "samples_feed_buf", ddl[19], buffer_args, buffer_args, err, errlen);
    if (rc == 0)
        rc = ch_each(s, ddl[20], err, errlen);
    static const struct {
        int ddl;
        const char *name;
    } views[5] = {{5, "rollup_mv"}, {7, "rollup_version_mv"}, {11, "rollup_label_mv"}, {13, "rollup_series_mv"},
                  {17, "rollup_version_day_mv"}};
    for (size_t h = 0; h < s->n_hosts && rc == 0; h++)
        for (int v = 0; v < 5 && rc == 0; v++) {
            int label = views[v].ddl == 11;
            rc = replace_table(s, h, views[v].name, label && !s->n_roll_keys ? NULL : ddl[views[v].ddl], "samples_feed",
                               label ? keys.s : "samples_feed", err, errlen);
        }
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
                hs_err(err, errlen, "clickhouse: out of memory");
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

/* An integer of [0, max] (*out unchanged: -1). */
static int parse_long(const char *v, long max, long *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!*v || *end || errno || n < 0 || n > max)
        return -1;
    *out = n;
    return 0;
}

int ch_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

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
            hs_err(err, errlen, "clickhouse URL '%s': rollup_labels must be label keys of [A-Za-z0-9_.:/-] "
                    "separated by commas", url);
            return -1;
        }
    }
    if (n > CH_MAX_ROLL_KEYS) {
        hs_err(err, errlen, "clickhouse URL '%s': rollup_labels lists more than %d keys", url, CH_MAX_ROLL_KEYS);
        return -1;
    }
    if (!(s->roll_keys = calloc(n, sizeof *s->roll_keys))) {
        hs_err(err, errlen, "out of memory");
        return -1;
    }
    for (const char *c = v;; c++) {
        const char *e = strchr(c, ',');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (!len) {
            hs_err(err, errlen, "clickhouse URL '%s': rollup_labels has an empty key", url);
            return -1;
        }
        if (!(s->roll_keys[s->n_roll_keys] = strndup(c, len))) {
            hs_err(err, errlen, "out of memory");
            return -1;
        }
        s->n_roll_keys++;
        if (!e)
            break;
        c = e;
    }
    qsort(s->roll_keys, s->n_roll_keys, sizeof *s->roll_keys, ch_cmp_str);
    for (size_t i = 1; i < s->n_roll_keys; i++)
        if (strcmp(s->roll_keys[i - 1], s->roll_keys[i]) == 0) {
            hs_err(err, errlen, "clickhouse URL '%s': rollup_labels lists '%s' twice", url, s->roll_keys[i]);
            return -1;
        }
    return 0;
}

int ch_parse_url(ch_store *s, const char *url, char *err, size_t errlen)
{
    const char *p = url + strlen("clickhouse://");
    const char *slash = strchr(p, '/');
    if (!slash) {
        hs_err(err, errlen, "clickhouse URL '%s' needs a database: clickhouse://HOST:PORT/DB", url);
        return -1;
    }
    char *auth = strndup(p, (size_t)(slash - p));
    if (!auth) {
        hs_err(err, errlen, "out of memory");
        return -1;
    }
    char *hosts = auth, *at = strrchr(auth, '@');
    if (at) {
        *at = 0;
        hosts = at + 1;
        s->userpwd = strdup(auth);
        if (!s->userpwd) {
            free(auth);
            hs_err(err, errlen, "out of memory");
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
                hs_err(err, errlen, "clickhouse URL '%s': bad port in '%s'", url, tok);
                rc = -1;
                break;
            }
            *colon = 0;
        }
        if (!*tok) {
            hs_err(err, errlen, "clickhouse URL '%s': empty host", url);
            rc = -1;
            break;
        }
        ch_host *nh = realloc(s->hosts, (s->n_hosts + 1) * sizeof *nh);
        if (!nh || !(nh[s->n_hosts].host = strdup(tok))) {
            if (nh)
                s->hosts = nh;
            hs_err(err, errlen, "out of memory");
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
        hs_err(err, errlen, "clickhouse URL '%s' has no host", url);
        return -1;
    }
    const char *q = strchr(slash, '?');
    size_t dblen = q ? (size_t)(q - slash - 1) : strlen(slash + 1);
    s->db = strndup(slash + 1, dblen);
    if (!s->db) {
        hs_err(err, errlen, "out of memory");
        return -1;
    }
    if (!valid_ident(s->db)) {
        hs_err(err, errlen, "clickhouse URL '%s': the database name must be [A-Za-z0-9_]+", url);
        return -1;
    }
    if (!q)
        return 0;
    char *opts = strdup(q + 1);
    if (!opts) {
        hs_err(err, errlen, "out of memory");
        return -1;
    }
    for (char *save = NULL, *kv = strtok_r(opts, "&", &save); kv && rc == 0; kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            hs_err(err, errlen, "clickhouse URL '%s': option '%s' needs a value", url, kv);
            rc = -1;
            break;
        }
        *eq = 0;
        const char *v = eq + 1;
        if (strcmp(kv, "cluster") == 0) {
            if (!valid_ident(v)) {
                hs_err(err, errlen, "clickhouse URL '%s': the cluster name must be [A-Za-z0-9_]+", url);
                rc = -1;
            } else {
                free(s->cluster);
                if (!(s->cluster = strdup(v))) {
                    hs_err(err, errlen, "out of memory");
                    rc = -1;
                }
            }
        } else if (strcmp(kv, "rollup") == 0) {
            if (strcmp(v, "0") && strcmp(v, "1")) {
                hs_err(err, errlen, "clickhouse URL '%s': rollup must be 0 or 1", url);
                rc = -1;
            } else {
                s->rollup = v[0] == '1';
            }
        } else if (strcmp(kv, "label_rollup_min") == 0) {
            if (parse_long(v, 1000000000, &s->label_roll_min)) {
                hs_err(err, errlen, "clickhouse URL '%s': label_rollup_min must be a count in [0, 1000000000]", url);
                rc = -1;
            }
        } else if (strcmp(kv, "rollup_labels") == 0) {
            rc = parse_keys(s, url, v, err, errlen);
        } else if (strcmp(kv, "rollup_delay") == 0) {
            if (parse_long(v, 3600, &s->roll_delay)) {
                hs_err(err, errlen, "clickhouse URL '%s': rollup_delay must be seconds in [0, 3600]", url);
                rc = -1;
            }
        } else if (strcmp(kv, "timeout") == 0) {
            if (parse_seconds(v, &s->timeout_ms)) {
                hs_err(err, errlen, "clickhouse URL '%s': timeout must be seconds in (0, 86400]", url);
                rc = -1;
            }
        } else if (strcmp(kv, "connect_timeout") == 0) {
            if (parse_seconds(v, &s->connect_ms)) {
                hs_err(err, errlen, "clickhouse URL '%s': connect_timeout must be seconds in (0, 86400]", url);
                rc = -1;
            }
        } else {
            hs_err(err, errlen, "clickhouse URL '%s': unknown option '%s' (cluster, timeout, "
                    "connect_timeout, rollup, rollup_labels, rollup_delay, label_rollup_min)",
                    url, kv);
            rc = -1;
        }
    }
    free(opts);
    return rc;
}
