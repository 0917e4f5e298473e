/* sqlite.c — the embedded store: one SQLite database, DIR/hotspur.db.
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

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
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
static int sql_code(sqlite3 *db, int rc)
{
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
        return HS_STORE_UNAVAILABLE;
    int sys = db ? sqlite3_system_errno(db) : 0;
    if ((rc & 0xff) == SQLITE_FULL || ((rc & 0xff) == SQLITE_IOERR && (sys == ENOSPC || sys == EDQUOT)))
        return HS_STORE_FULL;
    return -1;
}

static int sql_fail(sqlite3 *db, int rc, const char *what, char *err, size_t errlen)
{
    ERR("sqlite: %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    return sql_code(db, rc);
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
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

static int prep(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t errlen)
{
    int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(db, rc, "prepare", err, errlen);
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
        if ((r = exec(db,
                      "PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                      " PRAGMA journal_size_limit=67108864;",
                      err, errlen)) < 0 ||
            (r = exec(db, "BEGIN IMMEDIATE", err, errlen)) < 0)
            goto fail;
        if ((r = exec(db, SCHEMA, err, errlen)) < 0) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            goto fail;
        }
        if ((r = exec(db, "COMMIT", err, errlen)) < 0)
            goto fail;
    } else if ((r = exec(db, "PRAGMA query_only=1", err, errlen)) < 0) {
        goto fail;
    }
    /* page cache, grown only as used: the writer's holds a big batch's new
     * pages (beyond it they spill to the WAL and are read back) */
    if ((r = exec(db, writer ? "PRAGMA cache_size=-131072" : "PRAGMA cache_size=-32768", err, errlen)) < 0)
        goto fail;
    /* readers read the database through a memory map (no copy per page
     * read); the file is ours alone (hotspur.lock) */
    if (!writer && (r = exec(db, "PRAGMA mmap_size=1073741824", err, errlen)) < 0)
        goto fail;
    *out = db;
    return 0;
fail:
    sqlite3_close(db);
    return r;
}

static void kind_free(kind *k)
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
        kind_free(s->kinds[i]);
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

static reader *reader_get(sq *s, char *err, size_t errlen)
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
    if (prep(r->db, "SELECT hash FROM stacks WHERE id=?", &r->id_hash, err, errlen) < 0 ||
        prep(r->db, "SELECT record FROM stacks WHERE hash=?", &r->hash_record, err, errlen) < 0 ||
        prep(r->db,
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

static void reader_put(sq *s, reader *r)
{
    pthread_mutex_lock(&s->pmu);
    r->busy = false;
    pthread_cond_signal(&s->pcv);
    pthread_mutex_unlock(&s->pmu);
}

/* ---- opening ---- */

static int mkdirs(const char *dir, char *err, size_t errlen)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) {
        ERR("sqlite: directory name too long");
        return -1;
    }
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST) {
            ERR("sqlite: cannot create %s: %s", tmp, strerror(errno));
            return -1;
        }
        *p = '/';
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST) {
        ERR("sqlite: cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    return 0;
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
    if (prep(s->w, "SELECT 1 FROM profiles WHERE id=?", &s->s_exists, err, errlen) < 0 ||
        prep(s->w, "SELECT kid, types FROM kinds WHERE service=? AND type=?", &s->s_kind_get, err, errlen) < 0 ||
        prep(s->w,
             "INSERT INTO kinds(service, type, types, default_index, period_type, period_unit, period)"
             " VALUES(?,?,?,?,?,?,?)",
             &s->s_kind_ins, err, errlen) < 0 ||
        prep(s->w, "SELECT id, last_hour FROM stacks WHERE hash=?", &s->s_stack_get, err, errlen) < 0 ||
        prep(s->w, "INSERT INTO stacks(hash, last_hour, record) VALUES(?,?,?)", &s->s_stack_ins, err, errlen) < 0 ||
        prep(s->w, "UPDATE stacks SET last_hour=? WHERE id=?", &s->s_stack_touch, err, errlen) < 0 ||
        prep(s->w,
             "INSERT INTO profiles(id, kid, version, start_ns, duration_ns, n_samples, t0, t1, t2, t3, samples)"
             " VALUES(?,?,?,?,?,?,?,?,?,?,?)",
             &s->s_prof_ins, err, errlen) < 0 ||
        prep(s->w, "INSERT INTO labels(pid, key, value) VALUES(?,?,?)", &s->s_label_ins, err, errlen) < 0)
        goto fail;
    return &s->base;
fail:
    sq_close(&s->base);
    return NULL;
}

/* ---- put ---- */

static void cache_clear(sq *s)
{
    hs_idmap_free(&s->cache);
    s->c_n = 0;
    if (hs_idmap_init(&s->cache, 1024) < 0)
        s->cache.cap = 0; /* cache_find/cache_add check for this */
}

static ssize_t cache_find(sq *s, uint64_t hash)
{
    if (!s->cache.cap)
        return -1;
    size_t slot = (size_t)-1;
    uint32_t c;
    while ((c = hs_idmap_next(&s->cache, hash, &slot)) != UINT32_MAX)
        if (s->c_hash[c] == hash)
            return c;
    return -1;
}

static int cache_add(sq *s, uint64_t hash, int64_t id, int64_t hour)
{
    if (s->c_n >= STACK_CACHE_MAX)
        cache_clear(s);
    if (!s->cache.cap && hs_idmap_init(&s->cache, 1024) < 0)
        return -1;
    if (s->c_n == s->c_cap) {
        size_t nc = s->c_cap ? s->c_cap * 2 : 4096;
        uint64_t *nh = realloc(s->c_hash, nc * sizeof *nh);
        if (!nh)
            return -1;
        s->c_hash = nh;
        int64_t *ni = realloc(s->c_id, nc * sizeof *ni);
        if (!ni)
            return -1;
        s->c_id = ni;
        int64_t *nr = realloc(s->c_hour, nc * sizeof *nr);
        if (!nr)
            return -1;
        s->c_hour = nr;
        s->c_cap = nc;
    }
    s->c_hash[s->c_n] = hash;
    s->c_id[s->c_n] = id;
    s->c_hour[s->c_n] = hour;
    if (hs_idmap_put(&s->cache, hash, (uint32_t)s->c_n) < 0)
        return -1;
    s->c_n++;
    return 0;
}

/* The id of the stack with this hash, inserting its record when it is new
 * (data may be NULL: then an unknown hash is an error) and raising its
 * last_hour to hour. */
static int stack_id(sq *s, uint64_t hash, const void *data, size_t len, int64_t hour, int64_t *id, char *err,
                    size_t errlen)
{
    ssize_t c = cache_find(s, hash);
    if (c >= 0) {
        *id = s->c_id[c];
        if (s->c_hour[c] >= hour)
            return 0;
    } else {
        sqlite3_stmt *g = s->s_stack_get;
        sqlite3_bind_int64(g, 1, (int64_t)hash);
        int rc = sqlite3_step(g);
        if (rc == SQLITE_ROW) {
            *id = sqlite3_column_int64(g, 0);
            int64_t h = sqlite3_column_int64(g, 1);
            sqlite3_reset(g);
            if (cache_add(s, hash, *id, h) < 0) {
                ERR("out of memory");
                return -1;
            }
            c = (ssize_t)s->c_n - 1;
            if (h >= hour)
                return 0;
        } else if (rc == SQLITE_DONE) {
            sqlite3_reset(g);
            if (!data) {
                ERR("a sample references stack %016" PRIx64 " whose record was not given", hash);
                return -1;
            }
            sqlite3_stmt *in = s->s_stack_ins;
            sqlite3_bind_int64(in, 1, (int64_t)hash);
            sqlite3_bind_int64(in, 2, hour);
            sqlite3_bind_blob(in, 3, data, (int)len, SQLITE_STATIC);
            rc = sqlite3_step(in);
            sqlite3_reset(in);
            sqlite3_clear_bindings(in);
            if (rc != SQLITE_DONE)
                return sql_fail(s->w, rc, "insert stack", err, errlen);
            *id = sqlite3_last_insert_rowid(s->w);
            if (cache_add(s, hash, *id, hour) < 0) {
                ERR("out of memory");
                return -1;
            }
            return 0;
        } else {
            sqlite3_reset(g);
            return sql_fail(s->w, rc, "look up stack", err, errlen);
        }
    }
    sqlite3_stmt *t = s->s_stack_touch;
    sqlite3_bind_int64(t, 1, hour);
    sqlite3_bind_int64(t, 2, *id);
    int rc = sqlite3_step(t);
    sqlite3_reset(t);
    if (rc != SQLITE_DONE)
        return sql_fail(s->w, rc, "update stack", err, errlen);
    s->c_hour[c] = hour;
    return 0;
}

static void types_text(const hs_store_types *t, hs_bytes *b)
{
    b->n = 0;
    for (size_t i = 0; i < t->n; i++) {
        hs_bytes_str(b, t->type[i]);
        hs_bytes_str(b, "\t");
        hs_bytes_str(b, t->unit[i]);
        hs_bytes_str(b, "\n");
    }
    hs_bytes_str(b, "");
}

/* types_text's "type\tunit\n..." as "type/unit, ..." for messages. */
static void types_human(const char *text, char *out, size_t len)
{
    size_t w = 0;
    for (const char *p = text; *p && w + 3 < len; p++) {
        if (*p == '\t')
            out[w++] = '/';
        else if (*p == '\n') {
            if (p[1]) {
                out[w++] = ',';
                out[w++] = ' ';
            }
        } else
            out[w++] = *p;
    }
    out[w] = '\0';
}

static int kind_id(sq *s, const hs_store_profile *p, hs_bytes *scratch, int64_t *kid, char *err, size_t errlen)
{
    types_text(&p->types, scratch);
    if (scratch->oom) {
        ERR("out of memory");
        return -1;
    }
    sqlite3_stmt *g = s->s_kind_get;
    sqlite3_bind_text(g, 1, p->service, -1, SQLITE_STATIC);
    sqlite3_bind_text(g, 2, p->type, -1, SQLITE_STATIC);
    int rc = sqlite3_step(g);
    if (rc == SQLITE_ROW) {
        *kid = sqlite3_column_int64(g, 0);
        const char *have = (const char *)sqlite3_column_text(g, 1);
        bool same = have && strcmp(have, (const char *)scratch->p) == 0;
        char want[256];
        types_human(have ? have : "", want, sizeof want); /* before the reset frees have */
        sqlite3_reset(g);
        if (!same) {
            char got[256];
            hs_store_types_format(&p->types, got, sizeof got);
            ERR("profile %s: its sample types (%s) differ from those stored for %s/%s (%s): upload it "
                "under another type or service",
                p->id, got, p->service, p->type, want);
            return HS_STORE_REFUSED;
        }
        return 0;
    }
    sqlite3_reset(g);
    if (rc != SQLITE_DONE)
        return sql_fail(s->w, rc, "look up kind", err, errlen);
    sqlite3_stmt *in = s->s_kind_ins;
    sqlite3_bind_text(in, 1, p->service, -1, SQLITE_STATIC);
    sqlite3_bind_text(in, 2, p->type, -1, SQLITE_STATIC);
    sqlite3_bind_text(in, 3, (const char *)scratch->p, -1, SQLITE_STATIC);
    sqlite3_bind_int(in, 4, p->types.default_index);
    sqlite3_bind_text(in, 5, p->types.period_type ? p->types.period_type : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(in, 6, p->types.period_unit ? p->types.period_unit : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(in, 7, p->types.period);
    rc = sqlite3_step(in);
    sqlite3_reset(in);
    if (rc != SQLITE_DONE)
        return sql_fail(s->w, rc, "insert kind", err, errlen);
    *kid = sqlite3_last_insert_rowid(s->w);
    return 0;
}

typedef struct {
    int64_t id;
    const int64_t *values;
} idval;

static int idval_cmp(const void *a, const void *b)
{
    const idval *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int validate(const hs_store_profile *p, char *err, size_t errlen)
{
    if (!p->service || !*p->service || !p->type || !*p->type) {
        ERR("profile %s: service and type are required", p->id);
        return -1;
    }
    if (p->types.n == 0 || p->types.n > HS_STORE_MAX_VALUES) {
        ERR("profile %s: %zu sample types (1 to %d supported)", p->id, p->types.n, HS_STORE_MAX_VALUES);
        return -1;
    }
    if (!p->id[0] || strnlen(p->id, sizeof p->id) == sizeof p->id) {
        ERR("profile: id missing or not terminated");
        return -1;
    }
    for (size_t i = 0; i < p->types.n; i++)
        if (!p->types.type[i] || !p->types.unit[i]) {
            ERR("profile %s: sample type %zu has no name or unit", p->id, i);
            return -1;
        }
    return 0;
}

/* Store one profile inside the open transaction. 1 when it was a duplicate. */
static int put_one(sq *s, const hs_store_profile *p, hs_bytes *blob, hs_bytes *scratch, idval **iv, size_t *cap_iv,
                   char *err, size_t errlen)
{
    int r;
    if ((r = validate(p, err, errlen)) < 0)
        return r;
    sqlite3_stmt *ex = s->s_exists;
    sqlite3_bind_text(ex, 1, p->id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(ex);
    sqlite3_reset(ex);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc != SQLITE_DONE)
        return sql_fail(s->w, rc, "look up profile", err, errlen);
    int64_t kid = 0;
    if ((r = kind_id(s, p, scratch, &kid, err, errlen)) < 0)
        return r;
    int64_t hour = floor_div(p->start_ns, HOUR_NS);
    int64_t id;
    for (size_t i = 0; i < p->n_stacks; i++)
        if ((r = stack_id(s, p->stacks[i].hash, p->stacks[i].data, p->stacks[i].len, hour, &id, err, errlen)) < 0)
            return r;
    if (p->n_samples > *cap_iv) {
        idval *n = realloc(*iv, p->n_samples * sizeof *n);
        if (!n) {
            ERR("out of memory");
            return -1;
        }
        *iv = n;
        *cap_iv = p->n_samples;
    }
    size_t nv = p->types.n;
    uint64_t g[HS_STORE_MAX_VALUES] = {0};
    /* ratio[j]: column j == column 0 x ratio[j] in every sample so far */
    bool is_ratio[HS_STORE_MAX_VALUES] = {false, true, true, true}, ratio_known[HS_STORE_MAX_VALUES] = {0};
    int64_t ratio[HS_STORE_MAX_VALUES] = {0};
    for (size_t i = 0; i < p->n_samples; i++) {
        if ((r = stack_id(s, p->samples[i].stack, NULL, 0, hour, &(*iv)[i].id, err, errlen)) < 0)
            return r;
        const int64_t *v = p->samples[i].values;
        (*iv)[i].values = v;
        for (size_t j = 0; j < nv; j++) {
            g[j] = gcd_u64(g[j], v[j] < 0 ? -(uint64_t)v[j] : (uint64_t)v[j]);
            if (j == 0 || !is_ratio[j])
                continue;
            if (v[0] == 0) {
                is_ratio[j] = v[j] == 0;
            } else if (v[j] % v[0] != 0 || (ratio_known[j] && v[j] / v[0] != ratio[j])) {
                is_ratio[j] = false;
            } else {
                ratio[j] = v[j] / v[0];
                ratio_known[j] = true;
            }
        }
    }
    if (p->n_samples > 0) /* none: *iv may still be NULL, which qsort must not get */
        qsort(*iv, p->n_samples, sizeof **iv, idval_cmp);
    blob->n = 0;
    hs_bytes_uv(blob, nv);
    for (size_t j = 0; j < nv; j++) {
        if (g[j] == 0)
            g[j] = 1;
        if (j > 0 && is_ratio[j] && ratio[j] >= -(INT64_C(1) << 40) && ratio[j] <= (INT64_C(1) << 40))
            hs_bytes_uv(blob, hs_zigzag(ratio[j]) << 1 | 1);
        else {
            is_ratio[j] = false;
            hs_bytes_uv(blob, g[j] << 1);
        }
    }
    int64_t prev = 0;
    for (size_t i = 0; i < p->n_samples; i++) {
        if (i > 0 && (*iv)[i].id == prev) {
            ERR("profile %s: two samples with stack %" PRId64 "; samples must be merged by stack", p->id, prev);
            return -1;
        }
        hs_bytes_uv(blob, (uint64_t)((*iv)[i].id - prev));
        prev = (*iv)[i].id;
        for (size_t j = 0; j < nv; j++)
            if (!is_ratio[j])
                hs_bytes_uv(blob, hs_zigzag((*iv)[i].values[j] / (int64_t)g[j]));
    }
    if (blob->oom) {
        ERR("out of memory");
        return -1;
    }
    sqlite3_stmt *in = s->s_prof_ins;
    sqlite3_bind_text(in, 1, p->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(in, 2, kid);
    sqlite3_bind_text(in, 3, p->version ? p->version : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(in, 4, p->start_ns);
    sqlite3_bind_int64(in, 5, p->duration_ns);
    sqlite3_bind_int64(in, 6, (int64_t)p->n_samples);
    for (int j = 0; j < HS_STORE_MAX_VALUES; j++)
        sqlite3_bind_int64(in, 7 + j, (size_t)j < nv ? p->totals[j] : 0);
    sqlite3_bind_blob(in, 11, blob->p, (int)blob->n, SQLITE_STATIC);
    rc = sqlite3_step(in);
    sqlite3_reset(in);
    sqlite3_clear_bindings(in);
    if (rc != SQLITE_DONE)
        return sql_fail(s->w, rc, "insert profile", err, errlen);
    int64_t pid = sqlite3_last_insert_rowid(s->w);
    sqlite3_stmt *li = s->s_label_ins;
    for (size_t i = 0; i < p->n_labels; i++) {
        sqlite3_bind_int64(li, 1, pid);
        sqlite3_bind_text(li, 2, p->labels[i].key, -1, SQLITE_STATIC);
        sqlite3_bind_text(li, 3, p->labels[i].value ? p->labels[i].value : "", -1, SQLITE_STATIC);
        rc = sqlite3_step(li);
        sqlite3_reset(li);
        if (rc == SQLITE_CONSTRAINT) {
            ERR("profile %s: label '%s' given twice", p->id, p->labels[i].key);
            return -1;
        }
        if (rc != SQLITE_DONE)
            return sql_fail(s->w, rc, "insert label", err, errlen);
    }
    return 0;
}

static int sq_put(hs_store *s_, const hs_store_profile *const *profiles, size_t n, unsigned char *dup, char *err,
                  size_t errlen)
{
    sq *s = (sq *)s_;
    hs_bytes blob = {0}, scratch = {0};
    idval *iv = NULL;
    size_t cap_iv = 0;
    pthread_mutex_lock(&s->wmu);
    int r = exec(s->w, "BEGIN IMMEDIATE", err, errlen);
    if (r < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        r = put_one(s, profiles[i], &blob, &scratch, &iv, &cap_iv, err, errlen);
        if (r < 0)
            break;
        dup[i] = r == 1;
        r = 0;
    }
    if (r == 0)
        r = exec(s->w, "COMMIT", err, errlen);
    if (r < 0) {
        sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
        cache_clear(s); /* it may hold ids of rows that were rolled back */
    }
out:
    pthread_mutex_unlock(&s->wmu);
    free(blob.p);
    free(scratch.p);
    free(iv);
    return r;
}

/* ---- selection: the WHERE clause of a query over profiles p ---- */

typedef struct {
    hs_bytes sql;
    const char *bind_s[512];
    int64_t bind_i[512];
    bool is_int[512];
    int n;
    int overflow;
} qb;

static void qb_s(qb *b, const char *s)
{
    if (b->n >= 512) {
        b->overflow = 1;
        return;
    }
    b->is_int[b->n] = false;
    b->bind_s[b->n++] = s ? s : "";
}

static void qb_i(qb *b, int64_t v)
{
    if (b->n >= 512) {
        b->overflow = 1;
        return;
    }
    b->is_int[b->n] = true;
    b->bind_i[b->n++] = v;
}

/* The conditions on kinds k (service, type). */
static void kind_conds(qb *b, const hs_store_query *q)
{
    hs_bytes_str(&b->sql, "1");
    if (q->service) {
        hs_bytes_str(&b->sql, " AND k.service=?");
        qb_s(b, q->service);
    }
    if (q->type) {
        hs_bytes_str(&b->sql, " AND k.type=?");
        qb_s(b, q->type);
    }
}

/* The conditions on profiles p other than the kind. */
static void profile_conds(qb *b, const hs_store_query *q)
{
    if (q->from_ns) {
        hs_bytes_str(&b->sql, " AND p.start_ns>=?");
        qb_i(b, q->from_ns);
    }
    if (q->until_ns) {
        hs_bytes_str(&b->sql, " AND p.start_ns<?");
        qb_i(b, q->until_ns);
    }
    if (q->n_versions) {
        hs_bytes_str(&b->sql, " AND p.version IN (");
        for (size_t i = 0; i < q->n_versions; i++) {
            hs_bytes_str(&b->sql, i ? ",?" : "?");
            qb_s(b, q->versions[i]);
        }
        hs_bytes_str(&b->sql, ")");
    }
    if (q->n_ids) {
        hs_bytes_str(&b->sql, " AND p.id IN (");
        for (size_t i = 0; i < q->n_ids; i++) {
            hs_bytes_str(&b->sql, i ? ",?" : "?");
            qb_s(b, q->ids[i]);
        }
        hs_bytes_str(&b->sql, ")");
    }
    for (size_t i = 0; i < q->n_labels; i++) {
        hs_bytes_str(&b->sql, " AND p.pid IN (SELECT l.pid FROM labels l WHERE l.key=? AND l.value=?)");
        qb_s(b, q->labels[i].key);
        qb_s(b, q->labels[i].value);
    }
}

/* "p.kid IN (SELECT kid FROM kinds k WHERE ...) AND ..." */
static void where_profiles(qb *b, const hs_store_query *q)
{
    hs_bytes_str(&b->sql, " WHERE p.kid IN (SELECT k.kid FROM kinds k WHERE ");
    kind_conds(b, q);
    hs_bytes_str(&b->sql, ")");
    profile_conds(b, q);
}

static int qb_prepare(sqlite3 *db, qb *b, sqlite3_stmt **st, char *err, size_t errlen)
{
    if (b->sql.oom) {
        ERR("out of memory");
        return -1;
    }
    if (b->overflow) {
        ERR("query has too many versions, ids or labels (at most 500 values)");
        return -1;
    }
    int rc = sqlite3_prepare_v2(db, (const char *)b->sql.p, -1, st, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(db, rc, "prepare query", err, errlen);
    for (int i = 0; i < b->n; i++) {
        if (b->is_int[i])
            sqlite3_bind_int64(*st, i + 1, b->bind_i[i]);
        else
            sqlite3_bind_text(*st, i + 1, b->bind_s[i], -1, SQLITE_STATIC);
    }
    return 0;
}

/* ---- listings ---- */

/* Run b's SELECT on a reader and collect one element of `size` bytes per
 * row, zeroed, then filled by row (0, or -1 on out of memory). Frees b's
 * SQL. *out and *n hold the elements filled even on error, for the caller
 * to free. 0, or -1 with a message. */
static int sq_collect(sq *s, qb *b, const char *what, size_t size, int (*row)(sqlite3_stmt *, void *, void *),
                      void *arg, void **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    reader *rd = reader_get(s, err, errlen);
    if (!rd) {
        free(b->sql.p);
        return -1;
    }
    sqlite3_stmt *st = NULL;
    int r = qb_prepare(rd->db, b, &st, err, errlen), rc = SQLITE_DONE;
    unsigned char *v = NULL;
    size_t nv = 0, cap = 0;
    while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (nv == cap) {
            size_t nc = cap ? cap * 2 : 64;
            unsigned char *np = realloc(v, nc * size);
            if (!np) {
                ERR("out of memory");
                r = -1;
                break;
            }
            v = np;
            cap = nc;
        }
        memset(v + nv * size, 0, size);
        if (row(st, v + nv * size, arg) != 0) {
            ERR("out of memory");
            r = -1;
            break;
        }
        nv++;
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = sql_fail(rd->db, rc, what, err, errlen);
    sqlite3_finalize(st);
    reader_put(s, rd);
    free(b->sql.p);
    *out = v;
    *n = nv;
    return r;
}

static int string_row(sqlite3_stmt *st, void *elem, void *arg)
{
    (void)arg;
    const char *t = (const char *)sqlite3_column_text(st, 0);
    return (*(char **)elem = strdup(t ? t : "")) ? 0 : -1;
}

static int sq_strings(hs_store *s_, int what, const hs_store_query *q, const char *name, char ***out, size_t *n,
                      char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    static const hs_store_query all = {0};
    if (!q)
        q = &all;
    *out = NULL;
    *n = 0;
    qb b = {0};
    switch (what) {
    case HS_STORE_SERVICES:
    case HS_STORE_TYPES:
        hs_bytes_str(&b.sql, what == HS_STORE_SERVICES ? "SELECT k.service FROM kinds k WHERE "
                                                  : "SELECT k.type FROM kinds k WHERE ");
        kind_conds(&b, q);
        hs_bytes_str(&b.sql, " AND EXISTS(SELECT 1 FROM profiles p WHERE p.kid=k.kid");
        profile_conds(&b, q);
        hs_bytes_str(&b.sql, ") GROUP BY 1 ORDER BY 1");
        break;
    case HS_STORE_VERSIONS:
        hs_bytes_str(&b.sql, "SELECT DISTINCT p.version FROM profiles p");
        where_profiles(&b, q);
        hs_bytes_str(&b.sql, " ORDER BY 1");
        break;
    case HS_STORE_LABEL_NAMES:
    case HS_STORE_LABEL_VALUES:
        hs_bytes_str(&b.sql, what == HS_STORE_LABEL_NAMES ? "SELECT DISTINCT l2.key FROM labels l2 WHERE "
                                                     : "SELECT DISTINCT l2.value FROM labels l2 WHERE ");
        if (what == HS_STORE_LABEL_VALUES) {
            hs_bytes_str(&b.sql, "l2.key=? AND ");
            qb_s(&b, name);
        }
        hs_bytes_str(&b.sql, "l2.pid IN (SELECT p.pid FROM profiles p");
        where_profiles(&b, q);
        hs_bytes_str(&b.sql, ") ORDER BY 1");
        break;
    default:
        ERR("unknown listing %d", what);
        return -1;
    }
    void *v;
    size_t nv;
    int r = sq_collect(s, &b, "listing", sizeof(char *), string_row, NULL, &v, &nv, err, errlen);
    if (r < 0) {
        hs_store_strings_free(v, nv);
        return r;
    }
    *out = v;
    *n = nv;
    return 0;
}

/* ---- kinds: sample types of (service, type) ---- */

static int parse_types(const char *text, hs_store_types *t, hs_bytes *strs)
{
    /* "type\tunit\n" lines; strs gets the NUL-separated strings, then the
     * pointers are fixed by the caller (offsets stored for now) */
    size_t n = 0;
    const char *p = text;
    while (*p && n < HS_STORE_MAX_VALUES) {
        const char *tab = strchr(p, '\t'), *nl = tab ? strchr(tab, '\n') : NULL;
        if (!tab || !nl)
            return -1;
        t->type[n] = (const char *)(uintptr_t)strs->n;
        if (hs_bytes_reserve(strs, (size_t)(tab - p) + 1) < 0)
            return -1;
        memcpy(strs->p + strs->n, p, (size_t)(tab - p));
        strs->n += (size_t)(tab - p);
        strs->p[strs->n++] = 0;
        t->unit[n] = (const char *)(uintptr_t)strs->n;
        if (hs_bytes_reserve(strs, (size_t)(nl - tab)) < 0)
            return -1;
        memcpy(strs->p + strs->n, tab + 1, (size_t)(nl - tab - 1));
        strs->n += (size_t)(nl - tab - 1);
        strs->p[strs->n++] = 0;
        n++;
        p = nl + 1;
    }
    t->n = n;
    return n ? 0 : -1;
}

/* The kind (service, type), cached for the store's life; NULL with *found
 * = false when there is none. */
static const kind *kind_lookup(sq *s, reader *rd, const char *service, const char *type, char *err, size_t errlen,
                               int *rcp)
{
    *rcp = 0;
    pthread_mutex_lock(&s->kmu);
    for (size_t i = 0; i < s->n_kinds; i++)
        if (strcmp(s->kinds[i]->service, service) == 0 && strcmp(s->kinds[i]->type, type) == 0) {
            kind *k = s->kinds[i];
            pthread_mutex_unlock(&s->kmu);
            return k;
        }
    pthread_mutex_unlock(&s->kmu);
    sqlite3_stmt *g = rd->kind_get;
    sqlite3_bind_text(g, 1, service, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(g, 2, type, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(g);
    if (rc != SQLITE_ROW) {
        if (rc != SQLITE_DONE)
            *rcp = sql_fail(rd->db, rc, "look up kind", err, errlen);
        sqlite3_reset(g);
        return NULL;
    }
    kind *k = calloc(1, sizeof *k);
    hs_bytes strs = {0};
    const char *types = (const char *)sqlite3_column_text(g, 1);
    const char *pt = (const char *)sqlite3_column_text(g, 3), *pu = (const char *)sqlite3_column_text(g, 4);
    if (!k || parse_types(types ? types : "", &k->types, &strs) < 0) {
        ERR(k ? "sqlite: bad sample types stored for %s/%s" : "out of memory", service, type);
        sqlite3_reset(g);
        free(strs.p);
        free(k);
        *rcp = -1;
        return NULL;
    }
    size_t pto = strs.n;
    hs_bytes_str(&strs, pt ? pt : "");
    strs.n++;
    size_t puo = strs.n;
    hs_bytes_str(&strs, pu ? pu : "");
    strs.n++;
    k->kid = sqlite3_column_int64(g, 0);
    k->types.default_index = sqlite3_column_int(g, 2);
    k->types.period = sqlite3_column_int64(g, 5);
    sqlite3_reset(g);
    k->service = strdup(service);
    k->type = strdup(type);
    if (strs.oom || !k->service || !k->type) {
        free(strs.p);
        kind_free(k);
        ERR("out of memory");
        *rcp = -1;
        return NULL;
    }
    k->strs = (char *)strs.p;
    for (size_t i = 0; i < k->types.n; i++) {
        k->types.type[i] = k->strs + (uintptr_t)k->types.type[i];
        k->types.unit[i] = k->strs + (uintptr_t)k->types.unit[i];
    }
    k->types.period_type = k->strs + pto;
    k->types.period_unit = k->strs + puo;
    pthread_mutex_lock(&s->kmu);
    for (size_t i = 0; i < s->n_kinds; i++) /* another thread may have added it */
        if (strcmp(s->kinds[i]->service, service) == 0 && strcmp(s->kinds[i]->type, type) == 0) {
            kind *have = s->kinds[i];
            pthread_mutex_unlock(&s->kmu);
            kind_free(k);
            return have;
        }
    kind **nk = realloc(s->kinds, (s->n_kinds + 1) * sizeof *nk);
    if (!nk) {
        pthread_mutex_unlock(&s->kmu);
        kind_free(k);
        ERR("out of memory");
        *rcp = -1;
        return NULL;
    }
    s->kinds = nk;
    s->kinds[s->n_kinds++] = k;
    pthread_mutex_unlock(&s->kmu);
    return k;
}

static int sq_type_info(hs_store *s_, const hs_store_query *q, hs_store_types *out, char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    if (!q || !q->service || !q->type) {
        ERR("type_info needs a service and a type");
        return -1;
    }
    reader *rd = reader_get(s, err, errlen);
    if (!rd)
        return -1;
    int rc;
    const kind *k = kind_lookup(s, rd, q->service, q->type, err, errlen, &rc);
    reader_put(s, rd);
    if (!k) {
        if (rc == 0)
            ERR("no %s profiles of service %s", q->type, q->service);
        return rc ? rc : -1;
    }
    *out = k->types;
    return 0;
}

/* ---- merge ---- */

typedef struct {
    uint32_t *dense;    /* stack id -> row index + 1, for ids < n_dense */
    int64_t n_dense;
    int64_t *ids;       /* slot -> stack id (0: empty), for the other ids */
    uint32_t *row;      /* slot -> row index */
    size_t cap, n;
    hs_store_row *rows; /* row index -> values (stack filled at the end) */
    int64_t *row_id;
    size_t cap_rows;
} acc;

static inline size_t acc_slot(int64_t id, size_t mask)
{
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 20) & mask;
}

static int acc_grow(acc *a)
{
    size_t nc = a->cap ? a->cap * 2 : 4096;
    int64_t *ni = calloc(nc, sizeof *ni);
    uint32_t *nr = malloc(nc * sizeof *nr);
    if (!ni || !nr) {
        free(ni);
        free(nr);
        return -1;
    }
    for (size_t i = 0; i < a->cap; i++) {
        if (!a->ids[i])
            continue;
        size_t j = acc_slot(a->ids[i], nc - 1);
        while (ni[j])
            j = (j + 1) & (nc - 1);
        ni[j] = a->ids[i];
        nr[j] = a->row[i];
    }
    free(a->ids);
    free(a->row);
    a->ids = ni;
    a->row = nr;
    a->cap = nc;
    return 0;
}

static hs_store_row *acc_new(acc *a, int64_t id);

/* The row of stack id, created when new; NULL on out of memory. */
static inline hs_store_row *acc_row(acc *a, int64_t id)
{
    if (id > 0 && id < a->n_dense) {
        if (a->dense[id])
            return &a->rows[a->dense[id] - 1];
        hs_store_row *r = acc_new(a, id);
        if (r)
            a->dense[id] = (uint32_t)a->n;
        return r;
    }
    if ((a->n + 1) * 2 > a->cap && acc_grow(a) < 0)
        return NULL;
    size_t mask = a->cap - 1, i = acc_slot(id, mask);
    while (a->ids[i]) {
        if (a->ids[i] == id)
            return &a->rows[a->row[i]];
        i = (i + 1) & mask;
    }
    hs_store_row *r = acc_new(a, id);
    if (r) {
        a->ids[i] = id;
        a->row[i] = (uint32_t)(a->n - 1);
    }
    return r;
}

/* A new row for stack id. */
static hs_store_row *acc_new(acc *a, int64_t id)
{
    if (a->n == a->cap_rows) {
        size_t nc = a->cap_rows ? a->cap_rows * 2 : 4096;
        hs_store_row *nr = realloc(a->rows, nc * sizeof *nr);
        if (!nr)
            return NULL;
        a->rows = nr;
        int64_t *ni = realloc(a->row_id, nc * sizeof *ni);
        if (!ni)
            return NULL;
        a->row_id = ni;
        a->cap_rows = nc;
    }
    a->row_id[a->n] = id;
    hs_store_row *r = &a->rows[a->n++];
    memset(r, 0, sizeof *r);
    return r;
}

static int decode_samples(acc *a, const unsigned char *p, size_t len, size_t want_n, char *err, size_t errlen)
{
    const unsigned char *end = p + len;
    int bad = 0;
    size_t nv = (size_t)hs_get_uv(&p, end, &bad);
    if (bad || nv != want_n) {
        ERR("sqlite: corrupt samples blob (values %zu, expected %zu)", nv, want_n);
        return -1;
    }
    int64_t g[HS_STORE_MAX_VALUES], ratio[HS_STORE_MAX_VALUES];
    bool is_ratio[HS_STORE_MAX_VALUES];
    for (size_t j = 0; j < nv; j++) {
        uint64_t c = hs_get_uv(&p, end, &bad);
        is_ratio[j] = j > 0 && (c & 1);
        g[j] = (int64_t)(c >> 1);
        ratio[j] = hs_unzigzag(c >> 1);
    }
    int64_t id = 0;
    while (p < end && !bad) {
        id += (int64_t)hs_get_uv(&p, end, &bad);
        hs_store_row *r = acc_row(a, id);
        if (!r) {
            ERR("out of memory");
            return -1;
        }
        int64_t v0 = hs_unzigzag(hs_get_uv(&p, end, &bad)) * g[0];
        r->values[0] += v0;
        for (size_t j = 1; j < nv; j++)
            r->values[j] += is_ratio[j] ? v0 * ratio[j] : hs_unzigzag(hs_get_uv(&p, end, &bad)) * g[j];
    }
    if (bad) {
        ERR("sqlite: corrupt samples blob");
        return -1;
    }
    return 0;
}

static int sq_merge(hs_store *s_, const hs_store_query *q, hs_store_merged *out, char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    memset(out, 0, sizeof *out);
    if (!q || !q->service || !q->type) {
        ERR("merge needs a service and a type");
        return -1;
    }
    reader *rd = reader_get(s, err, errlen);
    if (!rd)
        return -1;
    int r;
    const kind *k = kind_lookup(s, rd, q->service, q->type, err, errlen, &r);
    if (!k) {
        reader_put(s, rd);
        return r; /* 0: no such profiles: an empty result */
    }
    size_t sl = 0;
    for (size_t i = 0; i < k->types.n; i++)
        sl += strlen(k->types.type[i]) + strlen(k->types.unit[i]) + 2;
    sl += strlen(k->types.period_type) + strlen(k->types.period_unit) + 2;
    char *own = malloc(sl), *w = own;
    if (!own) {
        reader_put(s, rd);
        ERR("out of memory");
        return -1;
    }
#define COPY(dst, src)                                                                                      \
    do {                                                                                                    \
        size_t l_ = strlen(src) + 1;                                                                        \
        memcpy(w, (src), l_);                                                                               \
        (dst) = w;                                                                                          \
        w += l_;                                                                                            \
    } while (0)
    out->types = k->types;
    for (size_t i = 0; i < k->types.n; i++) {
        COPY(out->types.type[i], k->types.type[i]);
        COPY(out->types.unit[i], k->types.unit[i]);
    }
    COPY(out->types.period_type, k->types.period_type);
    COPY(out->types.period_unit, k->types.period_unit);
#undef COPY
    out->owned = own;

    /* one read transaction: the profiles and the stacks they use agree */
    if ((r = exec(rd->db, "BEGIN", err, errlen)) < 0) {
        reader_put(s, rd);
        hs_store_merged_free(out);
        return r;
    }
    acc a = {0};
    /* stack ids are dense (1..max): index rows by id directly when the
     * table is not huge (calloc'd pages that are never touched cost
     * nothing) */
    sqlite3_stmt *mx = NULL;
    if ((r = prep(rd->db, "SELECT coalesce(max(id), 0) FROM stacks", &mx, err, errlen)) == 0) {
        if (sqlite3_step(mx) == SQLITE_ROW) {
            int64_t max_id = sqlite3_column_int64(mx, 0);
            if (max_id < (INT64_C(1) << 26) && (a.dense = calloc((size_t)max_id + 1, sizeof *a.dense)))
                a.n_dense = max_id + 1;
        }
        sqlite3_finalize(mx);
    }
    qb b = {0};
    hs_bytes_str(&b.sql, "SELECT p.start_ns, p.duration_ns, p.t0, p.t1, p.t2, p.t3, p.samples FROM profiles p WHERE p.kid=?");
    qb_i(&b, k->kid);
    profile_conds(&b, q);
    sqlite3_stmt *st = NULL;
    if (r == 0)
        r = qb_prepare(rd->db, &b, &st, err, errlen);
    int rc = SQLITE_DONE;
    size_t nv = k->types.n;
    out->min_start_ns = INT64_MAX;
    out->max_end_ns = INT64_MIN;
    while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t start = sqlite3_column_int64(st, 0), dur = sqlite3_column_int64(st, 1);
        out->n_profiles++;
        if (start < out->min_start_ns)
            out->min_start_ns = start;
        if (start + dur > out->max_end_ns)
            out->max_end_ns = start + dur;
        for (size_t j = 0; j < nv; j++)
            out->totals[j] += sqlite3_column_int64(st, 2 + (int)j);
        const void *blob = sqlite3_column_blob(st, 6);
        int bl = sqlite3_column_bytes(st, 6);
        r = decode_samples(&a, blob, (size_t)bl, nv, err, errlen);
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = sql_fail(rd->db, rc, "merge", err, errlen);
    sqlite3_finalize(st);
    free(b.sql.p);
    if (out->n_profiles == 0)
        out->min_start_ns = out->max_end_ns = 0;
    /* stack ids -> hashes */
    sqlite3_stmt *ih = rd->id_hash;
    size_t kept = 0;
    for (size_t i = 0; r == 0 && i < a.n; i++) {
        sqlite3_bind_int64(ih, 1, a.row_id[i]);
        rc = sqlite3_step(ih);
        if (rc == SQLITE_ROW) {
            a.rows[kept] = a.rows[i];
            a.rows[kept++].stack = (uint64_t)sqlite3_column_int64(ih, 0);
        } else if (rc != SQLITE_DONE) {
            r = sql_fail(rd->db, rc, "stack hash", err, errlen);
        } else {
            ERR("sqlite: profile references missing stack %" PRId64, a.row_id[i]);
            r = -1;
        }
        sqlite3_reset(ih);
    }
    sqlite3_exec(rd->db, "COMMIT", NULL, NULL, NULL);
    reader_put(s, rd);
    free(a.dense);
    free(a.ids);
    free(a.row);
    free(a.row_id);
    if (r < 0) {
        free(a.rows);
        hs_store_merged_free(out);
        return r;
    }
    out->rows = a.rows;
    out->n_rows = kept;
    return 0;
}

/* ---- stacks by hash ---- */

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int sq_get_stacks(hs_store *s_, const uint64_t *hashes, size_t n,
                         void (*fn)(void *arg, uint64_t hash, const void *data, size_t len), void *arg, char *err,
                         size_t errlen)
{
    sq *s = (sq *)s_;
    /* look them up in index order (as stored: hashes as int64): each
     * seek then starts near the last one */
    int64_t *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted) {
        ERR("out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        sorted[i] = (int64_t)hashes[i] ^ INT64_MIN; /* signed order as unsigned */
    qsort(sorted, n, sizeof *sorted, u64_cmp);
    reader *rd = reader_get(s, err, errlen);
    if (!rd) {
        free(sorted);
        return -1;
    }
    int r = 0;
    sqlite3_stmt *st = rd->hash_record;
    /* one read transaction for a consistent view and fewer lock round trips */
    if ((r = exec(rd->db, "BEGIN", err, errlen)) < 0) {
        reader_put(s, rd);
        free(sorted);
        return r;
    }
    for (size_t i = 0; i < n && r == 0; i++) {
        int64_t h = sorted[i] ^ INT64_MIN;
        if (i > 0 && sorted[i] == sorted[i - 1])
            continue;
        sqlite3_bind_int64(st, 1, h);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            fn(arg, (uint64_t)h, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0));
        else if (rc != SQLITE_DONE)
            r = sql_fail(rd->db, rc, "get stack", err, errlen);
        sqlite3_reset(st);
    }
    sqlite3_exec(rd->db, "COMMIT", NULL, NULL, NULL);
    reader_put(s, rd);
    free(sorted);
    return r;
}

/* ---- series ---- */

/* One bucket: at = {from_ns, step_ns}. */
static int point_row(sqlite3_stmt *st, void *elem, void *arg)
{
    const int64_t *at = arg;
    hs_store_point *pt = elem;
    pt->t_ns = at[0] + sqlite3_column_int64(st, 0) * at[1];
    pt->n_profiles = sqlite3_column_int64(st, 1);
    for (int j = 0; j < HS_STORE_MAX_VALUES; j++)
        pt->totals[j] = sqlite3_column_int64(st, 2 + j);
    return 0;
}

static int sq_series(hs_store *s_, const hs_store_query *q, int64_t step_ns, hs_store_point **out, size_t *n,
                     char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    static const hs_store_query all = {0};
    if (!q)
        q = &all;
    *out = NULL;
    *n = 0;
    qb b = {0};
    hs_bytes_str(&b.sql, "SELECT (p.start_ns - ?) / ? AS b, count(*), sum(p.t0), sum(p.t1), sum(p.t2), sum(p.t3)"
                    " FROM profiles p");
    qb_i(&b, q->from_ns);
    qb_i(&b, step_ns);
    where_profiles(&b, q);
    hs_bytes_str(&b.sql, " GROUP BY b ORDER BY b");
    int64_t at[2] = {q->from_ns, step_ns};
    void *v;
    size_t nv;
    int r = sq_collect(s, &b, "series", sizeof(hs_store_point), point_row, at, &v, &nv, err, errlen);
    if (r < 0) {
        free(v);
        return r;
    }
    *out = v;
    *n = nv;
    return 0;
}

/* ---- the profile list ---- */

static int profile_row(sqlite3_stmt *st, void *elem, void *arg)
{
    (void)arg;
    hs_store_profile_row *pr = elem;
    const char *id = (const char *)sqlite3_column_text(st, 0), *ver = (const char *)sqlite3_column_text(st, 1);
    snprintf(pr->id, sizeof pr->id, "%s", id ? id : "");
    if (!(pr->version = strdup(ver ? ver : "")))
        return -1;
    pr->start_ns = sqlite3_column_int64(st, 2);
    pr->duration_ns = sqlite3_column_int64(st, 3);
    for (int j = 0; j < HS_STORE_MAX_VALUES; j++)
        pr->totals[j] = sqlite3_column_int64(st, 4 + j);
    return 0;
}

static int sq_profiles(hs_store *s_, const hs_store_query *q, size_t limit, hs_store_profile_row **out, size_t *n,
                       char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    static const hs_store_query all = {0};
    if (!q)
        q = &all;
    *out = NULL;
    *n = 0;
    qb b = {0};
    hs_bytes_str(&b.sql, "SELECT p.id, p.version, p.start_ns, p.duration_ns, p.t0, p.t1, p.t2, p.t3 FROM profiles p");
    where_profiles(&b, q);
    hs_bytes_str(&b.sql, " ORDER BY p.start_ns, p.id LIMIT ?");
    qb_i(&b, limit ? (int64_t)limit : -1);
    void *v;
    size_t nv;
    int r = sq_collect(s, &b, "profiles", sizeof(hs_store_profile_row), profile_row, NULL, &v, &nv, err, errlen);
    if (r < 0) {
        hs_store_profile_rows_free(v, nv);
        return r;
    }
    *out = v;
    *n = nv;
    return 0;
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
    int r = exec(s->w, sql, err, errlen);
    if (r < 0)
        sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
    cache_clear(s);
    if (r == 0)
        r = exec(s->w, "PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE);", err, errlen);
    pthread_mutex_unlock(&s->wmu);
    return r;
}

/* ---- stats ---- */

static int sq_stats(hs_store *s_, hs_store_stats *out, char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    reader *rd = reader_get(s, err, errlen);
    if (!rd)
        return -1;
    static const char *const sql =
        "SELECT (SELECT count(*) FROM profiles), (SELECT coalesce(sum(n_samples), 0) FROM profiles),"
        " (SELECT count(*) FROM stacks),"
        " (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count()),"
        " (SELECT page_size FROM pragma_page_size())";
    sqlite3_stmt *st = NULL;
    int r = prep(rd->db, sql, &st, err, errlen);
    if (r == 0) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            out->profiles = sqlite3_column_int64(st, 0);
            out->samples = sqlite3_column_int64(st, 1);
            out->stacks = sqlite3_column_int64(st, 2);
            out->bytes = sqlite3_column_int64(st, 3) * sqlite3_column_int64(st, 4);
        } else {
            r = sql_fail(rd->db, rc, "stats", err, errlen);
        }
    }
    sqlite3_finalize(st);
    reader_put(s, rd);
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
