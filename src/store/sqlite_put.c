/* sqlite_put.c — the SQLite store's put: stacks (with their cache), kinds,
 * and each profile's row, labels and packed samples, in one transaction. */
#include "store/sqlite_internal.h"
#include "base/vec.h"

/* ---- put ---- */

void sq_cache_clear(sq *s)
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
        sq_cache_clear(s);
    if (!s->cache.cap && hs_idmap_init(&s->cache, 1024) < 0)
        return -1;
    if (s->c_n == s->c_cap) { /* hash, id and hour side by side: one capacity */
        size_t nc = hs_vec_grown(s->c_cap, s->c_n + 1, sizeof *s->c_hash);
        if (!nc || HS_VEC_RESIZE(s->c_hash, nc) || HS_VEC_RESIZE(s->c_id, nc) || HS_VEC_RESIZE(s->c_hour, nc))
            return -1;
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
                return sq_sql_fail(s->w, rc, "insert stack", err, errlen);
            *id = sqlite3_last_insert_rowid(s->w);
            if (cache_add(s, hash, *id, hour) < 0) {
                ERR("out of memory");
                return -1;
            }
            return 0;
        } else {
            sqlite3_reset(g);
            return sq_sql_fail(s->w, rc, "look up stack", err, errlen);
        }
    }
    sqlite3_stmt *t = s->s_stack_touch;
    sqlite3_bind_int64(t, 1, hour);
    sqlite3_bind_int64(t, 2, *id);
    int rc = sqlite3_step(t);
    sqlite3_reset(t);
    if (rc != SQLITE_DONE)
        return sq_sql_fail(s->w, rc, "update stack", err, errlen);
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
        return sq_sql_fail(s->w, rc, "look up kind", err, errlen);
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
        return sq_sql_fail(s->w, rc, "insert kind", err, errlen);
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
        return sq_sql_fail(s->w, rc, "look up profile", err, errlen);
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
        return sq_sql_fail(s->w, rc, "insert profile", err, errlen);
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
            return sq_sql_fail(s->w, rc, "insert label", err, errlen);
    }
    return 0;
}

int sq_put(hs_store *s_, const hs_store_profile *const *profiles, size_t n, unsigned char *dup, char *err,
                  size_t errlen)
{
    sq *s = (sq *)s_;
    hs_bytes blob = {0}, scratch = {0};
    idval *iv = NULL;
    size_t cap_iv = 0;
    pthread_mutex_lock(&s->wmu);
    int r = sq_exec(s->w, "BEGIN IMMEDIATE", err, errlen);
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
        r = sq_exec(s->w, "COMMIT", err, errlen);
    if (r < 0) {
        sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
        sq_cache_clear(s); /* it may hold ids of rows that were rolled back */
    }
out:
    pthread_mutex_unlock(&s->wmu);
    free(blob.p);
    free(scratch.p);
    free(iv);
    return r;
}
