/* clickhouse_query.c — the ClickHouse store's reads but merges: the SQL
 * conditions that select rows (shared with clickhouse_merge.c), listings
 * (services, types, labels), type infos, stacks by hash, series and
 * profile rows. */
#define _GNU_SOURCE /* asprintf */
#include "store/clickhouse_internal.h"
#include "base/vec.h"

/* ---- selections ---- */

/* The retention watermark: profiles that started before it are gone
 * (see ch_retain). Read once per call, so every query of the call agrees,
 * and written as a plain bound that merges with the time range. */
int ch_watermark(ch_store *s, int64_t *wm, char *err, size_t errlen)
{
    hs_bytes b = {0}, ans = {0};
    hs_bytes_printf(&b, "SELECT max(before_ns) FROM %s.retention FORMAT RowBinary", s->db);
    int rc = ch_run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    *wm = rd_i64(&r);
    free(ans.p);
    return r.bad ? ch_malformed(err, errlen, "retention") : 0;
}

/* The watermark the last merge or series saw (*wm; 0 if none has yet),
 * and ch_wm_keep(s, wm) to remember one seen. */
int ch_wm_cached(ch_store *s, int64_t *wm)
{
    pthread_mutex_lock(&s->mu);
    int known = s->merge_wm_known;
    *wm = s->merge_wm;
    pthread_mutex_unlock(&s->mu);
    return known;
}

void ch_wm_keep(ch_store *s, int64_t wm)
{
    pthread_mutex_lock(&s->mu);
    s->merge_wm = wm;
    s->merge_wm_known = 1;
    pthread_mutex_unlock(&s->mu);
}

/* The conditions every row of the selection meets: its row type (none
 * when row is CH_NARROW), the kind, the time range from max(from,
 * watermark) (and its days, which prune partitions). */
void ch_where_rows(hs_bytes *b, const hs_store_query *q, int64_t wm, int row)
{
    int64_t from = q->from_ns > wm ? q->from_ns : wm;
    if (row == CH_NARROW)
        hs_bytes_str(b, "1");
    else
        hs_bytes_printf(b, "rowtype = %d", row);
    if (q->service && q->type)
        hs_bytes_printf(b, " AND kind = %" PRIu64, ch_kind_of(q->service, q->type));
    if (from > 0) {
        hs_bytes_printf(b, " AND start_ns >= %" PRId64 " AND " CH_HOUR_KEY " >= %" PRId64 " AND day >= ", from,
                   (int64_t)(from / CH_BUCKET_NS));
        ch_buf_day(b, ch_day_of(from));
    }
    if (q->until_ns) {
        hs_bytes_printf(b, " AND start_ns < %" PRId64 " AND " CH_HOUR_KEY " <= %" PRId64 " AND day <= ", q->until_ns,
                   (int64_t)(q->until_ns / CH_BUCKET_NS));
        ch_buf_day(b, ch_day_of(q->until_ns));
    }
}

/* The version and label conditions of q (on the profile rows' or the
 * series' columns of the same names). */
void ch_where_attrs(hs_bytes *b, const hs_store_query *q)
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
void ch_where_profiles(hs_bytes *b, const hs_store_query *q, int64_t wm)
{
    ch_where_rows(b, q, wm, 0);
    if (q->service) {
        hs_bytes_str(b, " AND service = ");
        buf_quote(b, q->service);
    }
    if (q->type) {
        hs_bytes_str(b, " AND type = ");
        buf_quote(b, q->type);
    }
    ch_where_attrs(b, q);
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
    ch_where_profiles(b, q, wm);
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
 * max(from, ch_watermark) (where_days_of: of another Date column). */
static void where_days_of(hs_bytes *b, const char *col, const hs_store_query *q, int64_t wm)
{
    int64_t from = q->from_ns > wm ? q->from_ns : wm;
    if (from > 0) {
        hs_bytes_printf(b, " AND %s >= ", col);
        ch_buf_day(b, ch_day_of(from));
    }
    if (q->until_ns) {
        hs_bytes_printf(b, " AND %s <= ", col);
        ch_buf_day(b, ch_day_of(q->until_ns));
    }
}

void ch_where_days(hs_bytes *b, const hs_store_query *q, int64_t wm) { where_days_of(b, "day", q, wm); }

void ch_fp_add(ch_fp *f, uint64_t day, uint64_t rows)
{
    f->n++;
    f->sum += hs_hmap_mix(day << 48 ^ rows);
}

/* "SELECT cols FROM system.parts ... GROUP BY min_date": per day of q's
 * range from max(from, wm) (min_date: samples is partitioned by day) the
 * rows samples holds, on the host asked (so only on one server); cols
 * name the day toUInt64(min_date) and the rows sum(rows). */
void ch_day_rows(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, const char *cols)
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
void ch_where_sids(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, const ch_sids *ids)
{
    if (ids) {
        hs_bytes_str(b, ids->n ? " AND sid IN (" : " AND 0");
        for (size_t i = 0; i < ids->n; i++)
            hs_bytes_printf(b, "%s%" PRIu64, i ? "," : "", ids->v[i]);
        hs_bytes_str(b, ids->n ? ")" : "");
        return;
    }
    hs_bytes_printf(b, " AND sid IN (SELECT sid FROM %s.series%s WHERE kind = %" PRIu64, s->db, s->local,
               ch_kind_of(q->service, q->type));
    ch_where_days(b, q, wm);
    ch_where_attrs(b, q);
    hs_bytes_str(b, ")");
}

/* " AND ..." selecting the rows of sel (profile or sample rows: after
 * where_rows or where_profiles), but for the other copies of an id (left
 * by two servers racing) listed in losers: almost always none. */
void ch_where_sel(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, ch_sel sel,
                      const ch_sids *ids, const uint64_t *losers, size_t n_losers)
{
    if (sel == CH_CHOSEN) {
        where_chosen(b, s, q, wm);
        return;
    }
    if (sel == CH_SERIES)
        ch_where_sids(b, s, q, wm, ids);
    where_not_losers(b, losers, n_losers);
}

/* " WHERE ..." (after FROM samples): the sample rows of the selection, one
 * copy per id (where_chosen or where_sids as PREWHERE on one server:
 * ClickHouse then reads the other columns only of the rows of selected
 * profiles or series; a Distributed table of 18.16 takes no PREWHERE). */
void ch_where_samples(hs_bytes *b, const ch_store *s, const hs_store_query *q, int64_t wm, ch_sel sel,
                          const ch_sids *ids, const uint64_t *losers, size_t n_losers)
{
    if (sel == CH_SERIES && !s->cluster && !n_losers) {
        hs_bytes_str(b, " PREWHERE 1");
        ch_where_sids(b, s, q, wm, ids);
        hs_bytes_str(b, " WHERE ");
        ch_where_rows(b, q, wm, 1);
        return;
    }
    if (sel == CH_CHOSEN) {
        if (s->cluster) {
            hs_bytes_str(b, " WHERE ");
            ch_where_rows(b, q, wm, 1);
            where_chosen(b, s, q, wm);
        } else {
            hs_bytes_str(b, " PREWHERE 1");
            where_chosen(b, s, q, wm);
            hs_bytes_str(b, " WHERE ");
            ch_where_rows(b, q, wm, 1);
        }
        return;
    }
    hs_bytes_str(b, " WHERE ");
    ch_where_rows(b, q, wm, 1);
    ch_where_sel(b, s, q, wm, sel, ids, losers, n_losers);
}

int ch_need_service_type(const hs_store_query *q, char *err, size_t errlen)
{
    if (!q || !q->service || !q->type) {
        hs_err(err, errlen, "clickhouse: the query needs a service and a type");
        return -1;
    }
    return 0;
}

/* Run q (built by the caller) and hand back its answer; frees q. */
int ch_run(ch_store *s, hs_bytes *q, hs_bytes *ans, char *err, size_t errlen)
{
    int rc;
    if (q->oom) {
        hs_err(err, errlen, "out of memory");
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

int ch_malformed(char *err, size_t errlen, const char *what)
{
    hs_err(err, errlen, "clickhouse: malformed answer to the %s query", what);
    return -1;
}

/* ---- listings ---- */

int ch_strings(hs_store *base, int what, const hs_store_query *q, const char *name, char ***out, size_t *n,
                      char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    static const hs_store_query all = {0};
    if (!q)
        q = &all;
    *out = NULL;
    *n = 0;
    int64_t wm = 0;
    int rc = what == HS_STORE_SIBLINGS ? 0 : ch_watermark(s, &wm, err, errlen);
    if (rc)
        return rc;
    hs_bytes b = {0}, ans = {0};
    size_t skip = 0; /* bytes of each answer's start not handed back */
    switch (what) {
    case HS_STORE_SIBLINGS: { /* databases DB + suffix + X: X */
        hs_bytes_printf(&b, "%s%s", s->db, name ? name : "");
        skip = b.n;
        char *prefix = b.s;
        b = (hs_bytes){0};
        hs_bytes_printf(&b, "SELECT name AS x FROM system.databases WHERE length(name) > %zu AND substring(name, 1, %zu) = ",
                        skip, skip);
        buf_quote(&b, prefix ? prefix : "");
        free(prefix);
        break;
    }
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
            hs_err(err, errlen, "clickhouse: label values need a label name");
            return -1;
        }
        hs_bytes_str(&b, "SELECT DISTINCT label_values[indexOf(label_keys, ");
        buf_quote(&b, name);
        hs_bytes_str(&b, ")] AS x");
        break;
    default:
        hs_err(err, errlen, "clickhouse: unknown listing %d", what);
        return -1;
    }
    if (what != HS_STORE_SIBLINGS) {
        hs_bytes_printf(&b, " FROM %s.samples WHERE ", s->db);
        ch_where_profiles(&b, q, wm);
    }
    if (what == HS_STORE_LABEL_VALUES) {
        hs_bytes_str(&b, " AND has(label_keys, ");
        buf_quote(&b, name);
        hs_bytes_str(&b, ")");
    }
    hs_bytes_str(&b, " ORDER BY x FORMAT RowBinary");
    rc = ch_run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    size_t cap = 0;
    char **v = NULL;
    while (rd_more(&r)) {
        char *str = rd_strdup(&r);
        if (!str)
            break;
        if (skip) /* the suffix after the prefix the query matched */
            memmove(str, str + skip, strlen(str + skip) + 1);
        if (HS_VEC_RESERVE(v, cap, *n + 1)) {
            free(str);
            r.bad = 1;
            break;
        }
        v[(*n)++] = str;
    }
    free(ans.p);
    if (r.bad) {
        hs_store_strings_free(v, *n);
        *n = 0;
        return ch_malformed(err, errlen, "listing");
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
int ch_types_dup(const hs_store_types *src, hs_store_types *dst, char **block)
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
int ch_kind_types(ch_store *s, const char *service, const char *type, const hs_store_types **out, char *err,
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
               s->db, ch_kind_of(service, type));
    buf_quote(&b, service);
    hs_bytes_str(&b, " AND type = ");
    buf_quote(&b, type);
    hs_bytes_str(&b, " LIMIT 1 FORMAT RowBinary");
    int rc = ch_run(s, &b, &ans, err, errlen);
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
        return ch_malformed(err, errlen, "type info");
    e = calloc(1, sizeof *e);
    if (!e || !(e->service = strdup(service)) || !(e->type = strdup(type))) {
        if (e)
            free(e->service);
        free(e);
        free(blk);
        hs_err(err, errlen, "out of memory");
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

int ch_type_info(hs_store *base, const hs_store_query *q, hs_store_types *out, char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    if (ch_need_service_type(q, err, errlen))
        return -1;
    const hs_store_types *t;
    int rc = ch_kind_types(s, q->service, q->type, &t, err, errlen);
    if (rc == 1) {
        hs_err(err, errlen, "no profile of service '%s' and type '%s'", q->service, q->type);
        return -1;
    }
    if (rc == 0)
        *out = *t;
    return rc;
}

int ch_same_types(const hs_store_types *a, const hs_store_types *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->type[i], b->type[i]) || strcmp(a->unit[i], b->unit[i]))
            return 0;
    return 1;
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
int ch_get_stacks(hs_store *base, const uint64_t *hashes, size_t n,
                         void (*fn)(void *arg, uint64_t hash, const void *data, size_t len), void *arg, char *err,
                         size_t errlen)
{
    ch_store *s = (ch_store *)base;
    uint64_t *ask = malloc((n < CH_IN_CHUNK ? n : CH_IN_CHUNK) * sizeof *ask + 1);
    ch_found *found = malloc((n < CH_IN_CHUNK ? n : CH_IN_CHUNK) * sizeof *found + 1);
    int rc = 0;
    if (!ask || !found) {
        hs_err(err, errlen, "out of memory");
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
        rc = ch_run(s, &b, &ans, err, errlen);
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
            rc = ch_malformed(err, errlen, "stacks");
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
 * count, the profile rows beyond one per pid), the ch_watermark (CH_PT_WM,
 * in the first sum). */
enum { CH_PT_POINT, CH_PT_PROBE, CH_PT_WM };

static int cmp_point(const void *a, const void *b)
{
    const hs_store_point *x = a, *y = b;
    return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

/* The profiles by start time: one GROUP BY of the selection's profile
 * rows by bucket, in one request with the ch_watermark (the one the last
 * merge or series saw, as ch_merge) and, unless the selection is the exact
 * one (?rollup=0), the duplicate probe of ch_merge instead of choosing a
 * copy per id (a GROUP BY of the string id over every profile row): with
 * copies among them, the request again without the losers (find_losers),
 * or the exact way when there are too many. */
int ch_series(hs_store *base, const hs_store_query *q, int64_t step_ns, hs_store_point **out, size_t *n,
                     char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    *out = NULL;
    *n = 0;
    if (ch_need_service_type(q, err, errlen))
        return -1;
    int64_t wm;
    int wm_known = ch_wm_cached(s, &wm);
    int rc = wm_known ? 0 : ch_watermark(s, &wm, err, errlen);
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
        ch_where_profiles(&b, q, wm);
        if (exact)
            where_chosen(&b, s, q, wm);
        else
            where_not_losers(&b, losers, n_losers);
        hs_bytes_str(&b, " GROUP BY bucket");
        if (probe) {
            hs_bytes_printf(&b, " UNION ALL SELECT toUInt8(%d), toInt64(0), toUInt64(count() - uniqExact(pid)), "
                           "toInt64(0), toInt64(0), toInt64(0), toInt64(0) FROM %s.samples WHERE ",
                       CH_PT_PROBE, s->db);
            ch_where_profiles(&b, q, wm);
        }
        hs_bytes_printf(&b, " UNION ALL SELECT toUInt8(%d), toInt64(0), toUInt64(0), max(before_ns), toInt64(0), "
                       "toInt64(0), toInt64(0) FROM %s.retention FORMAT RowBinary",
                   CH_PT_WM, s->db);
        rc = ch_run(s, &b, &ans, err, errlen);
        if (rc)
            break;
        size_t row = 1 + 8 + 8 + 8 * HS_STORE_MAX_VALUES, rows = ans.n / row;
        free(pts);
        pts = malloc((rows ? rows : 1) * sizeof *pts);
        m = 0;
        if (!pts) {
            free(ans.p);
            hs_err(err, errlen, "out of memory");
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
            rc = ch_malformed(err, errlen, "series");
            break;
        }
        if (wm_seen != wm) {
            /* (retention ran since: again with the new watermark, as
             * ch_merge) */
            ch_wm_keep(s, wm_seen);
            if (++wm_changes > 8) {
                hs_err(err, errlen, "clickhouse: the retention watermark kept changing during the series");
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
            ch_wm_keep(s, wm);
            wm_known = 1;
        }
        if (!twice)
            break;
        rc = ch_find_losers(s, q, wm, &losers, &n_losers, err, errlen);
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

int ch_profiles(hs_store *base, const hs_store_query *q, size_t limit, hs_store_profile_row **out,
                       size_t *n, char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    *out = NULL;
    *n = 0;
    if (ch_need_service_type(q, err, errlen))
        return -1;
    int64_t wm;
    int rc = ch_watermark(s, &wm, err, errlen);
    if (rc)
        return rc;
    hs_bytes b = {0}, ans = {0};
    hs_bytes_printf(&b, "SELECT id, version, start_ns, duration_ns, v0, v1, v2, v3 FROM %s.samples WHERE ", s->db);
    ch_where_profiles(&b, q, wm);
    where_chosen(&b, s, q, wm);
    hs_bytes_str(&b, " ORDER BY start_ns, id");
    if (limit)
        hs_bytes_printf(&b, " LIMIT %zu", limit);
    hs_bytes_str(&b, " FORMAT RowBinary");
    rc = ch_run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    ch_rd r = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    hs_store_profile_row *rows = NULL;
    size_t cap = 0, m = 0;
    while (rd_more(&r)) {
        if (HS_VEC_RESERVE(rows, cap, m + 1)) {
            r.bad = 1;
            break;
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
        return ch_malformed(err, errlen, "profiles");
    }
    *out = rows;
    *n = m;
    return 0;
}
