/* sqlite.c — the embedded store: one SQLite database, DIR/hotspur.db. This
 * file opens and closes it (connections, schema, the reader pool) and does
 * retention and stats; sqlite_put.c writes, sqlite_query.c reads; what they
 * share is in sqlite_internal.h.
 *
 * Schema (created idempotently; user_version = 1):
 *   kinds(kid, service, type, sample types...)    one row per (service, type)
 *   stacks(id, hash UNIQUE, last_hour, record)    every stack record, once
 *   profiles(pid, id UNIQUE, kid, version, start_ns, duration_ns,
 *            n_samples, t0..t3, samples)          index (kid, start_ns)
 *   labels(pid, key, value)                       profile labels, PK (pid, key),
 *                                                 index (key, value)
 *
 * Samples are not one row each: a row per sample costs 30-40 bytes and
 * would be ~10 KiB for a 300-sample profile. A profile's samples are one
 * blob in its row (format below) that references stacks by their small
 * integer id (AUTOINCREMENT: never reused, so an id names one record for
 * the store's life). A 300-sample CPU profile takes ~1 KiB that way.
 *
 *   samples blob: varint N (values per sample), N x varint C[j] (how
 *   column j is stored), then per sample, by ascending stack id: varint
 *   (id - previous id), then svarint (value / G[j]) for each stored column.
 *   C[j] even: column j is stored, divided by G[j] = C[j] / 2 (the gcd of
 *   the column over the profile, 1 if all are 0). C[j] odd (j > 0): column
 *   j is not stored: it is column 0 times the zigzag-decoded C[j] / 2 in
 *   every sample (cpu/nanoseconds = samples/count x period).
 *   A 300-sample CPU profile takes 2 bytes a sample that way.
 *
 * The merge ("GROUP BY stack") is done here, in C, by the backend: select
 * the profile rows through the (kid, start_ns) index, decode their blobs
 * into a hash map keyed by stack id (sized by distinct stacks, not by
 * profiles), then turn ids into hashes with one indexed lookup each.
 *
 * Durability: WAL with synchronous=FULL, so every commit fsyncs the WAL:
 * hs_store_put returning 0 survives kill -9 and power loss (NORMAL would
 * survive a process crash only). The cost is one fsync per put batch; the
 * server batches concurrent uploads into one put (group commit).
 *
 * Concurrency: one write connection behind a mutex (one transaction per
 * put), and a pool of up to 4 read connections (WAL lets readers run
 * beside the writer; a merge reads in one read transaction, so it sees
 * every stack its profiles use). Connections are opened
 * SQLITE_OPEN_NOMUTEX: each is used by one thread at a time under our
 * locks. Page caches grow as used up to 128 MiB (writer: a big batch's new
 * pages stay in memory) and 32 MiB (each reader); readers also map the
 * database file (mmap_size 1 GiB) so page reads are not copies. One process owns DIR at a time
 * (flock on DIR/hotspur.lock), which makes the writer's in-memory
 * hash -> id cache of stacks always right.
 *
 * Retention: profiles that started before the cut and their labels are
 * deleted; a stack is deleted when no profile can use it any more, known
 * from stacks.last_hour (the hour of the latest profile start using it,
 * kept exactly: a put raises it when a profile of a later hour uses the
 * stack). The database is auto_vacuum=INCREMENTAL: `PRAGMA
 * incremental_vacuum` then returns the freed pages to the file system, and
 * the WAL is truncated.
 */
#include "store/sqlite_internal.h"
#include "base/fs.h"

static int sql_code(sqlite3 *db, int rc)
{
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
        return HS_STORE_UNAVAILABLE;
    int sys = db ? sqlite3_system_errno(db) : 0;
    if ((rc & 0xff) == SQLITE_FULL || ((rc & 0xff) == SQLITE_IOERR && (sys == ENOSPC || sys == EDQUOT)))
        return HS_STORE_FULL;
    return -1;
}

int sq_sql_fail(sqlite3 *db, int rc, const char *what, char *err, size_t errlen)
{
    ERR("sqlite: %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    return sql_code(db, rc);
}

int sq_exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        ERR("sqlite: %s: %s", sql, msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return sql_code(db, rc);
    }
    return 0;
}

int sq_prep(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t errlen)
{
    int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
    if (rc != SQLITE_OK)
        return sq_sql_fail(db, rc, "prepare", err, errlen);
    return 0;
}

static const char *const SCHEMA =
    "CREATE TABLE IF NOT EXISTS kinds(kid INTEGER PRIMARY KEY, service TEXT NOT NULL, type TEXT NOT NULL,"
    " types TEXT NOT NULL, default_index INTEGER NOT NULL, period_type TEXT NOT NULL,"
    " period_unit TEXT NOT NULL, period INTEGER NOT NULL, UNIQUE(service, type));"
    "CREATE TABLE IF NOT EXISTS stacks(id INTEGER PRIMARY KEY AUTOINCREMENT, hash INTEGER NOT NULL UNIQUE,"
    " last_hour INTEGER NOT NULL, record BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS stacks_last_hour ON stacks(last_hour);"
    "CREATE TABLE IF NOT EXISTS profiles(pid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
    " kid INTEGER NOT NULL, version TEXT NOT NULL, start_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,"
    " n_samples INTEGER NOT NULL, t0 INTEGER NOT NULL, t1 INTEGER NOT NULL, t2 INTEGER NOT NULL,"
    " t3 INTEGER NOT NULL, samples BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS profiles_kind_start ON profiles(kid, start_ns);"
    "CREATE TABLE IF NOT EXISTS labels(pid INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY(pid, key)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS labels_kv ON labels(key, value);" /* (+ pid, the primary key) */
    "PRAGMA user_version=1;";

static int open_conn(const char *path, bool writer, sqlite3 **out, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        ERR("sqlite: cannot open %s: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db, 10000);
    int r;
    if (writer) {
        /* auto_vacuum only takes effect before the first table exists */
        /* journal_size_limit: the WAL file is cut back to 64 MiB after a
         * checkpoint (a big batch would otherwise leave it at its peak) */
        if ((r = sq_exec(db,
                      "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                      " PRAGMA journal_size_limit=67108864;",
                      err, errlen)) < 0 ||
            (r = sq_exec(db, "BEGIN IMMEDIATE", err, errlen)) < 0)
            goto fail;
        if ((r = sq_exec(db, SCHEMA, err, errlen)) < 0) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            goto fail;
        }
        if ((r = sq_exec(db, "COMMIT", err, errlen)) < 0)
            goto fail;
    } else if ((r = sq_exec(db, "PRAGMA query_only=1", err, errlen)) < 0) {
        goto fail;
    }
    /* page cache, grown only as used: the writer's holds a big batch's new
     * pages (beyond it they spill to the WAL and are read back) */
    if ((r = sq_exec(db, writer ? "PRAGMA cache_size=-131072" : "PRAGMA cache_size=-32768", err, errlen)) < 0)
        goto fail;
    /* readers read the database through a memory map (no copy per page
     * read); the file is ours alone (hotspur.lock) */
    if (!writer && (r = sq_exec(db, "PRAGMA mmap_size=1073741824", err, errlen)) < 0)
        goto fail;
    *out = db;
    return 0;
fail:
    sqlite3_close(db);
    return r;
}

void sq_kind_free(kind *k)
{
    if (!k)
        return;
    free(k->service);
    free(k->type);
    free(k->strs);
    free(k);
}

static void sq_close(hs_store *s_)
{
    sq *s = (sq *)s_;
    sqlite3_stmt *ws[] = {s->s_exists,    s->s_kind_get,    s->s_kind_ins, s->s_stack_get,
                          s->s_stack_ins, s->s_stack_touch, s->s_prof_ins, s->s_label_ins};
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
        sqlite3_finalize(ws[i]);
    if (s->w) {
        sqlite3_exec(s->w, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
        sqlite3_close(s->w);
    }
    for (int i = 0; i < s->n_readers; i++) {
        sqlite3_finalize(s->readers[i].id_hash);
        sqlite3_finalize(s->readers[i].hash_record);
        sqlite3_finalize(s->readers[i].kind_get);
        sqlite3_close(s->readers[i].db);
    }
    for (size_t i = 0; i < s->n_kinds; i++)
        sq_kind_free(s->kinds[i]);
    free(s->kinds);
    hs_idmap_free(&s->cache);
    free(s->c_hash);
    free(s->c_id);
    free(s->c_hour);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    pthread_mutex_destroy(&s->wmu);
    pthread_mutex_destroy(&s->pmu);
    pthread_cond_destroy(&s->pcv);
    pthread_mutex_destroy(&s->kmu);
    free(s->path);
    free(s);
}

/* ---- the reader pool ---- */

reader *sq_reader_get(sq *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->pmu);
    for (;;) {
        for (int i = 0; i < s->n_readers; i++)
            if (!s->readers[i].busy) {
                s->readers[i].busy = true;
                pthread_mutex_unlock(&s->pmu);
                return &s->readers[i];
            }
        if (s->n_readers < N_READERS)
            break;
        pthread_cond_wait(&s->pcv, &s->pmu);
    }
    reader *r = &s->readers[s->n_readers];
    memset(r, 0, sizeof *r);
    if (open_conn(s->path, false, &r->db, err, errlen) < 0) {
        pthread_mutex_unlock(&s->pmu);
        return NULL;
    }
    if (sq_prep(r->db, "SELECT hash FROM stacks WHERE id=?", &r->id_hash, err, errlen) < 0 ||
        sq_prep(r->db, "SELECT record FROM stacks WHERE hash=?", &r->hash_record, err, errlen) < 0 ||
        sq_prep(r->db,
             "SELECT kid, types, default_index, period_type, period_unit, period FROM kinds"
             " WHERE service=? AND type=?",
             &r->kind_get, err, errlen) < 0) {
        sqlite3_finalize(r->id_hash);
        sqlite3_finalize(r->hash_record);
        sqlite3_finalize(r->kind_get);
        sqlite3_close(r->db);
        memset(r, 0, sizeof *r);
        pthread_mutex_unlock(&s->pmu);
        return NULL;
    }
    r->busy = true;
    s->n_readers++;
    pthread_mutex_unlock(&s->pmu);
    return r;
}

void sq_reader_put(sq *s, reader *r)
{
    pthread_mutex_lock(&s->pmu);
    r->busy = false;
    pthread_cond_signal(&s->pcv);
    pthread_mutex_unlock(&s->pmu);
}

/* ---- opening ---- */

static int mkdirs(const char *dir, char *err, size_t errlen)
{
    char where[4096];
    if (hs_mkdirs(dir, 0700, where, sizeof where) == 0)
        return 0;
    if (errno == ENAMETOOLONG)
        ERR("sqlite: directory name too long");
    else
        ERR("sqlite: cannot create %s: %s", where, strerror(errno));
    return -1;
}

static const hs_store_ops sqlite_ops;

hs_store *hs_store_sqlite_open(const char *dir, char *err, size_t errlen)
{
    if (!sqlite3_threadsafe()) {
        ERR("sqlite: libsqlite3 was built without thread support");
        return NULL;
    }
    if (mkdirs(dir, err, errlen) < 0)
        return NULL;
    sq *s = calloc(1, sizeof *s);
    if (!s) {
        ERR("out of memory");
        return NULL;
    }
    s->base.ops = &sqlite_ops;
    s->lock_fd = -1;
    pthread_mutex_init(&s->wmu, NULL);
    pthread_mutex_init(&s->pmu, NULL);
    pthread_cond_init(&s->pcv, NULL);
    pthread_mutex_init(&s->kmu, NULL);
    char lock[4200];
    size_t dl = strlen(dir);
    s->path = malloc(dl + 16);
    if (!s->path || hs_idmap_init(&s->cache, 1024) < 0) {
        ERR("out of memory");
        goto fail;
    }
    snprintf(s->path, dl + 16, "%s/hotspur.db", dir);
    snprintf(lock, sizeof lock, "%s/hotspur.lock", dir);
    s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->lock_fd < 0) {
        ERR("sqlite: cannot open %s: %s", lock, strerror(errno));
        goto fail;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        ERR("sqlite: the store %s is in use by another process (or handle)", dir);
        goto fail;
    }
    if (open_conn(s->path, true, &s->w, err, errlen) < 0)
        goto fail;
    if (sq_prep(s->w, "SELECT 1 FROM profiles WHERE id=?", &s->s_exists, err, errlen) < 0 ||
        sq_prep(s->w, "SELECT kid, types FROM kinds WHERE service=? AND type=?", &s->s_kind_get, err, errlen) < 0 ||
        sq_prep(s->w,
             "INSERT INTO kinds(service, type, types, default_index, period_type, period_unit, period)"
             " VALUES(?,?,?,?,?,?,?)",
             &s->s_kind_ins, err, errlen) < 0 ||
        sq_prep(s->w, "SELECT id, last_hour FROM stacks WHERE hash=?", &s->s_stack_get, err, errlen) < 0 ||
        sq_prep(s->w, "INSERT INTO stacks(hash, last_hour, record) VALUES(?,?,?)", &s->s_stack_ins, err, errlen) < 0 ||
        sq_prep(s->w, "UPDATE stacks SET last_hour=? WHERE id=?", &s->s_stack_touch, err, errlen) < 0 ||
        sq_prep(s->w,
             "INSERT INTO profiles(id, kid, version, start_ns, duration_ns, n_samples, t0, t1, t2, t3, samples)"
             " VALUES(?,?,?,?,?,?,?,?,?,?,?)",
             &s->s_prof_ins, err, errlen) < 0 ||
        sq_prep(s->w, "INSERT INTO labels(pid, key, value) VALUES(?,?,?)", &s->s_label_ins, err, errlen) < 0)
        goto fail;
    return &s->base;
fail:
    sq_close(&s->base);
    return NULL;
}

/* ---- retention ---- */

static int sq_retain(hs_store *s_, int64_t before_ns, char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    char sql[512];
    /* a stack whose last_hour h satisfies (h + 1) * HOUR <= before_ns is
     * used only by profiles that started before before_ns */
    int64_t cut_hour = floor_div(before_ns, HOUR_NS);
    snprintf(sql, sizeof sql,
             "BEGIN IMMEDIATE;"
             "DELETE FROM labels WHERE pid IN (SELECT pid FROM profiles"
             " WHERE kid IN (SELECT kid FROM kinds) AND start_ns<%" PRId64 ");"
             "DELETE FROM profiles WHERE kid IN (SELECT kid FROM kinds) AND start_ns<%" PRId64 ";"
             "DELETE FROM stacks WHERE last_hour<%" PRId64 ";"
             "COMMIT;",
             before_ns, before_ns, cut_hour);
    pthread_mutex_lock(&s->wmu);
    int r = sq_exec(s->w, sql, err, errlen);
    if (r < 0)
        sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
    sq_cache_clear(s);
    if (r == 0)
        r = sq_exec(s->w, "PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE);", err, errlen);
    pthread_mutex_unlock(&s->wmu);
    return r;
}

/* ---- stats ---- */

static int sq_stats(hs_store *s_, hs_store_stats *out, char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    reader *rd = sq_reader_get(s, err, errlen);
    if (!rd)
        return -1;
    static const char *const sql =
        "SELECT (SELECT count(*) FROM profiles), (SELECT coalesce(sum(n_samples), 0) FROM profiles),"
        " (SELECT count(*) FROM stacks),"
        " (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count()),"
        " (SELECT page_size FROM pragma_page_size())";
    sqlite3_stmt *st = NULL;
    int r = sq_prep(rd->db, sql, &st, err, errlen);
    if (r == 0) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            out->profiles = sqlite3_column_int64(st, 0);
            out->samples = sqlite3_column_int64(st, 1);
            out->stacks = sqlite3_column_int64(st, 2);
            out->bytes = sqlite3_column_int64(st, 3) * sqlite3_column_int64(st, 4);
        } else {
            r = sq_sql_fail(rd->db, rc, "stats", err, errlen);
        }
    }
    sqlite3_finalize(st);
    sq_reader_put(s, rd);
    return r;
}

static const hs_store_ops sqlite_ops = {
    .name = "sqlite",
    /* One writer (SQLite has one); a commit (one fsync) goes as soon as no
     * announced upload is left to wait for, at most 10 ms after its first. */
    .batching = {.max_profiles = 128, .wait_ms = 10, .writers = 1, .linger = 0},
    .close = sq_close,
    .put = sq_put,
    .strings = sq_strings,
    .type_info = sq_type_info,
    .merge = sq_merge,
    .get_stacks = sq_get_stacks,
    .series = sq_series,
    .profiles = sq_profiles,
    .retain = sq_retain,
    .stats = sq_stats,
};
