/* sqlite_query.c — the SQLite store's reads: the WHERE clause of a
 * selection, listings, kinds (type infos), merge, stacks by hash, series
 * and the profile list. */
#include "store/sqlite_internal.h"
#include "base/vec.h"

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
        return sq_sql_fail(db, rc, "prepare query", err, errlen);
    for (int i = 0; i < b->n; i++) {
        if (b->is_int[i])
            sqlite3_bind_int64(*st, i + 1, b->bind_i[i]);
        else
            sqlite3_bind_text(*st, i + 1, b->bind_s[i], -1, SQLITE_STATIC);
    }
    return 0;
}

/* ---- listings ---- */

/* What a NULL query means: every profile. */
static const hs_store_query query_all;

/* Run b's SELECT on a reader and collect one element of `size` bytes per
 * row, zeroed, then filled by row (0, or -1 on out of memory). Frees b's
 * SQL. On success *out and *n hold the elements; on error the elements
 * filled so far go to drop (NULL: free) and *out, *n stay NULL, 0.
 * 0, or -1 with a message. */
static int sq_collect(sq *s, qb *b, const char *what, size_t size, int (*row)(sqlite3_stmt *, void *, void *),
                      void *arg, void (*drop)(void *, size_t), void **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    reader *rd = sq_reader_get(s, err, errlen);
    if (!rd) {
        free(b->sql.p);
        return -1;
    }
    sqlite3_stmt *st = NULL;
    int r = qb_prepare(rd->db, b, &st, err, errlen), rc = SQLITE_DONE;
    unsigned char *v = NULL;
    size_t nv = 0, cap = 0;
    while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (hs_vec_reserve((void **)&v, &cap, nv + 1, size)) {
            ERR("out of memory");
            r = -1;
            break;
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
        r = sq_sql_fail(rd->db, rc, what, err, errlen);
    sqlite3_finalize(st);
    sq_reader_put(s, rd);
    free(b->sql.p);
    if (r < 0) {
        if (drop)
            drop(v, nv);
        else
            free(v);
        return r;
    }
    *out = v;
    *n = nv;
    return 0;
}

static void drop_strings(void *v, size_t n)
{
    hs_store_strings_free(v, n);
}

static void drop_profile_rows(void *v, size_t n)
{
    hs_store_profile_rows_free(v, n);
}

static int string_row(sqlite3_stmt *st, void *elem, void *arg)
{
    (void)arg;
    const char *t = (const char *)sqlite3_column_text(st, 0);
    return (*(char **)elem = strdup(t ? t : "")) ? 0 : -1;
}

int sq_strings(hs_store *s_, int what, const hs_store_query *q, const char *name, char ***out, size_t *n,
                      char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    if (!q)
        q = &query_all;
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
    case HS_STORE_SIBLINGS:
        return 0; /* none: a directory's tenants are directories the server finds */
    default:
        ERR("unknown listing %d", what);
        return -1;
    }
    return sq_collect(s, &b, "listing", sizeof(char *), string_row, NULL, drop_strings, (void **)out, n, err, errlen);
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
            *rcp = sq_sql_fail(rd->db, rc, "look up kind", err, errlen);
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
        sq_kind_free(k);
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
            sq_kind_free(k);
            return have;
        }
    kind **nk = realloc(s->kinds, (s->n_kinds + 1) * sizeof *nk);
    if (!nk) {
        pthread_mutex_unlock(&s->kmu);
        sq_kind_free(k);
        ERR("out of memory");
        *rcp = -1;
        return NULL;
    }
    s->kinds = nk;
    s->kinds[s->n_kinds++] = k;
    pthread_mutex_unlock(&s->kmu);
    return k;
}

int sq_type_info(hs_store *s_, const hs_store_query *q, hs_store_types *out, char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    if (!q || !q->service || !q->type) {
        ERR("type_info needs a service and a type");
        return -1;
    }
    reader *rd = sq_reader_get(s, err, errlen);
    if (!rd)
        return -1;
    int rc;
    const kind *k = kind_lookup(s, rd, q->service, q->type, err, errlen, &rc);
    sq_reader_put(s, rd);
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
    if (a->n == a->cap_rows) { /* rows and row_id side by side: one capacity */
        size_t nc = hs_vec_grown(a->cap_rows, a->n + 1, sizeof *a->rows);
        if (!nc || HS_VEC_RESIZE(a->rows, nc) || HS_VEC_RESIZE(a->row_id, nc))
            return NULL;
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

int sq_merge(hs_store *s_, const hs_store_query *q, hs_store_merged *out, char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    memset(out, 0, sizeof *out);
    if (!q || !q->service || !q->type) {
        ERR("merge needs a service and a type");
        return -1;
    }
    reader *rd = sq_reader_get(s, err, errlen);
    if (!rd)
        return -1;
    int r;
    const kind *k = kind_lookup(s, rd, q->service, q->type, err, errlen, &r);
    if (!k) {
        sq_reader_put(s, rd);
        return r; /* 0: no such profiles: an empty result */
    }
    size_t sl = 0;
    for (size_t i = 0; i < k->types.n; i++)
        sl += strlen(k->types.type[i]) + strlen(k->types.unit[i]) + 2;
    sl += strlen(k->types.period_type) + strlen(k->types.period_unit) + 2;
    char *own = malloc(sl), *w = own;
    if (!own) {
        sq_reader_put(s, rd);
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
    if ((r = sq_exec(rd->db, "BEGIN", err, errlen)) < 0) {
        sq_reader_put(s, rd);
        hs_store_merged_free(out);
        return r;
    }
    acc a = {0};
    /* stack ids are dense (1..max): index rows by id directly when the
     * table is not huge (calloc'd pages that are never touched cost
     * nothing) */
    sqlite3_stmt *mx = NULL;
    if ((r = sq_prep(rd->db, "SELECT coalesce(max(id), 0) FROM stacks", &mx, err, errlen)) == 0) {
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
        r = sq_sql_fail(rd->db, rc, "merge", err, errlen);
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
            r = sq_sql_fail(rd->db, rc, "stack hash", err, errlen);
        } else {
            ERR("sqlite: profile references missing stack %" PRId64, a.row_id[i]);
            r = -1;
        }
        sqlite3_reset(ih);
    }
    sqlite3_exec(rd->db, "COMMIT", NULL, NULL, NULL);
    sq_reader_put(s, rd);
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

int sq_get_stacks(hs_store *s_, const uint64_t *hashes, size_t n,
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
    reader *rd = sq_reader_get(s, err, errlen);
    if (!rd) {
        free(sorted);
        return -1;
    }
    int r = 0;
    sqlite3_stmt *st = rd->hash_record;
    /* one read transaction for a consistent view and fewer lock round trips */
    if ((r = sq_exec(rd->db, "BEGIN", err, errlen)) < 0) {
        sq_reader_put(s, rd);
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
            r = sq_sql_fail(rd->db, rc, "get stack", err, errlen);
        sqlite3_reset(st);
    }
    sqlite3_exec(rd->db, "COMMIT", NULL, NULL, NULL);
    sq_reader_put(s, rd);
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

int sq_series(hs_store *s_, const hs_store_query *q, int64_t step_ns, hs_store_point **out, size_t *n,
                     char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    if (!q)
        q = &query_all;
    qb b = {0};
    hs_bytes_str(&b.sql, "SELECT (p.start_ns - ?) / ? AS b, count(*), sum(p.t0), sum(p.t1), sum(p.t2), sum(p.t3)"
                    " FROM profiles p");
    qb_i(&b, q->from_ns);
    qb_i(&b, step_ns);
    where_profiles(&b, q);
    hs_bytes_str(&b.sql, " GROUP BY b ORDER BY b");
    int64_t at[2] = {q->from_ns, step_ns};
    return sq_collect(s, &b, "series", sizeof(hs_store_point), point_row, at, NULL, (void **)out, n, err, errlen);
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

int sq_profiles(hs_store *s_, const hs_store_query *q, size_t limit, hs_store_profile_row **out, size_t *n,
                       char *err, size_t errlen)
{
    sq *s = (sq *)s_;
    if (!q)
        q = &query_all;
    qb b = {0};
    hs_bytes_str(&b.sql, "SELECT p.id, p.version, p.start_ns, p.duration_ns, p.t0, p.t1, p.t2, p.t3 FROM profiles p");
    where_profiles(&b, q);
    hs_bytes_str(&b.sql, " ORDER BY p.start_ns, p.id LIMIT ?");
    qb_i(&b, limit ? (int64_t)limit : -1);
    return sq_collect(s, &b, "profiles", sizeof(hs_store_profile_row), profile_row, NULL, drop_profile_rows,
                      (void **)out, n, err, errlen);
}
