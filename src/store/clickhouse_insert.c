/* clickhouse_insert.c — the ClickHouse store's put: profiles, their
 * series and samples rows, and the stacks not yet stored, as INSERTs. */
#define _GNU_SOURCE /* asprintf */
#include "store/clickhouse_internal.h"

/* ---- put ---- */

uint16_t ch_day_of(int64_t ns)
{
    int64_t d = ns >= 0 ? ns / CH_DAY_NS : 0;
    return d > 65535 ? 65535 : (uint16_t)d;
}

/* toDate('YYYY-MM-DD') of a day number. */
void ch_buf_day(hs_bytes *b, uint16_t day)
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
            hs_err(err, errlen, "getrandom: %s", strerror(errno));
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
        hs_err(err, errlen, "clickhouse: out of memory");
        return -1;
    }
    int rc = ch_any(s, CH_INSERT, sql, rows, set.s, NULL, err, errlen);
    free(set.p);
    return rc;
}

/* The kind of (service, type): what the samples' key starts with. Only
 * ever a filter that narrows the reading; the exact service and type are
 * checked on the profile rows. */
uint64_t ch_kind_of(const char *service, const char *type)
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
        uint16_t d = ch_day_of(ps[i]->start_ns);
        size_t j, known = nd < sizeof days / sizeof *days ? nd : sizeof days / sizeof *days;
        for (j = 0; j < known && days[j] != d; j++)
            ;
        if (j < known)
            continue; /* (past 64 days a day may repeat: harmless) */
        if (nd < sizeof days / sizeof *days)
            days[nd] = d;
        if (nd++)
            hs_bytes_str(b, ",");
        ch_buf_day(b, d);
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
        hs_err(err, errlen, "out of memory");
        return -1;
    }
    size_t m = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        if (dup[i])
            continue;
        uint16_t day = ch_day_of(ps[i]->start_ns);
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
    uint16_t day = ch_day_of(p->start_ns);
    uint64_t kind = ch_kind_of(p->service, p->type), pid = hs_stack_hash(p->id, strlen(p->id)), sid = sid_of(p);
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

int ch_put(hs_store *base, const hs_store_profile *const *profiles, size_t n, unsigned char *marked,
                  char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    if (n == 0)
        return 0;
    size_t n_rows = 0;
    for (size_t i = 0; i < n; i++) {
        const hs_store_profile *p = profiles[i];
        if (!p->service || !*p->service || !p->type || !*p->type || !p->id[0]) {
            hs_err(err, errlen, "clickhouse: a profile needs an id, a service and a type");
            return -1;
        }
        if (p->types.n == 0 || p->types.n > HS_STORE_MAX_VALUES || p->types.default_index < 0 ||
            p->types.default_index > 255) {
            hs_err(err, errlen, "clickhouse: bad sample types in profile %s", p->id);
            return -1;
        }
        n_rows += p->n_samples + 1;
    }
    if (n_rows > CH_MAX_BLOCK) {
        hs_err(err, errlen, "clickhouse: a put of %zu rows (at most %d, one block): store fewer profiles at once",
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
        hs_err(err, errlen, "out of memory");
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
        rc = ch_kind_types(s, p->service, p->type, &ref, err, errlen);
        if (rc < 0)
            goto out;
        if (rc == 1)
            ref = &first->types;
        rc = 0;
        for (j = i; j < n; j++) {
            const hs_store_profile *o = profiles[j];
            if (strcmp(o->service, p->service) == 0 && strcmp(o->type, p->type) == 0 && !ch_same_types(&o->types, ref)) {
                char got[256], want[256];
                hs_store_types_format(&o->types, got, sizeof got);
                hs_store_types_format(ref, want, sizeof want);
                hs_err(err, errlen,
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
        rc = ch_run(s, &q, &ans, err, errlen);
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
            rc = ch_malformed(err, errlen, "id check");
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
        hs_err(err, errlen, "out of memory");
        rc = -1;
        goto out;
    }
    if (stacks.n && (rc = ch_insert(s, "stacks", &stacks, err, errlen)))
        goto out;
    if (n_added)
        cache_add(s, added, n_added);
    rc = ch_insert(s, "samples", &rows, err, errlen);
    if (rc == 0) {
        pthread_mutex_lock(&s->mu);
        s->put_any = 1;
        pthread_mutex_unlock(&s->mu);
    }
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
