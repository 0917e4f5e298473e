/* clickhouse_merge.c — the ClickHouse store's merge: the sums per stack of
 * a selection, from the rollups or the samples, in one request. */
#define _GNU_SOURCE /* asprintf */
#include "store/clickhouse_internal.h"

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
                                !bsearch(&q->labels[0].key, s->roll_keys, s->n_roll_keys, sizeof *s->roll_keys, ch_cmp_str));
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
    hs_bytes_printf(b, " WHERE rowtype = %d AND kind = %" PRIu64, row, ch_kind_of(q->service, q->type));
    if (r->series) {
        ch_where_sids(b, s, q, wm, ids);
    } else if (q->n_labels) { /* (one: rollup_range) */
        hs_bytes_str(b, " AND label_key = ");
        buf_quote(b, q->labels[0].key);
        hs_bytes_str(b, " AND label_value = ");
        buf_quote(b, q->labels[0].value);
    }
    hs_bytes_printf(b, " AND bucket >= %" PRId64 " AND day >= ", b0);
    ch_buf_day(b, ch_day_of(b0));
    if (b1) {
        hs_bytes_printf(b, " AND bucket < %" PRId64 " AND day <= ", b1);
        ch_buf_day(b, ch_day_of(b1 - 1));
    }
    if (q->n_versions && !r->series)
        ch_where_attrs(b, q); /* (versions only: rollup_range) */
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
 * or the ch_watermark (CH_ROW_WM, in v0). One request answers all three. */
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
        ch_where_rows(b, q, wm, 1);
        ch_where_sel(b, s, q, wm, sel, ids, NULL, 0);
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
        ch_where_rows(b, &o, 0, 1);
        ch_where_sel(b, s, &o, 0, sel, ids, NULL, 0);
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
    ch_where_samples(b, s, q, wm, sel, ids, losers, n_losers);
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
        hs_bytes_printf(b, " kind = %" PRIu64, ch_kind_of(q->service, q->type));
        ch_where_days(b, q, wm);
        hs_bytes_str(b, "))");
    }
}

/* The tokens of the copies to leave out of q's range (none unless two
 * servers raced on an id): the ids stored more than once are found by
 * their hash, pid (a GROUP BY of one integer column over the profile
 * rows), and only their rows are grouped by id; every copy but the one
 * with the smallest token per id. *losers: malloc'd. */
int ch_find_losers(ch_store *s, const hs_store_query *q, int64_t wm, uint64_t **losers, size_t *n_losers,
                       char *err, size_t errlen)
{
    hs_bytes b = {0}, ans = {0};
    hs_bytes_printf(&b, "SELECT ins FROM %s.samples WHERE ", s->db);
    ch_where_profiles(&b, q, wm);
    hs_bytes_printf(&b, " AND pid IN (SELECT pid FROM %s.samples%s WHERE ", s->db, s->local);
    ch_where_profiles(&b, q, wm);
    hs_bytes_printf(&b, " GROUP BY pid HAVING count() > 1) AND ins NOT IN (SELECT min(ins) FROM %s.samples%s WHERE ",
               s->db, s->local);
    ch_where_profiles(&b, q, wm);
    hs_bytes_printf(&b, " AND pid IN (SELECT pid FROM %s.samples%s WHERE ", s->db, s->local);
    ch_where_profiles(&b, q, wm);
    hs_bytes_str(&b, " GROUP BY pid HAVING count() > 1) GROUP BY id) FORMAT RowBinary");
    int rc = ch_run(s, &b, &ans, err, errlen);
    if (rc)
        return rc;
    if (ans.n % 8) {
        free(ans.p);
        return ch_malformed(err, errlen, "copies");
    }
    size_t n = ans.n / 8;
    uint64_t *v = malloc((n ? n : 1) * sizeof *v);
    ch_rd lr = {(const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.n, 0};
    for (size_t i = 0; v && i < n; i++)
        v[i] = rd_u64(&lr);
    free(ans.p);
    if (!v) {
        hs_err(err, errlen, "out of memory");
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
                ch_fp_add(fp, key, (uint64_t)v[0]);
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
    if (ch_need_service_type(q, err, errlen))
        return -1;
    memset(out, 0, sizeof *out);
    /* The watermark: the one the last merge saw, checked by this merge's
     * own request (its CH_ROW_WM row); read first only by the first. */
    int64_t wm;
    int wm_known = ch_wm_cached(s, &wm);
    int rc = wm_known ? 0 : ch_watermark(s, &wm, err, errlen);
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
                ch_where_profiles(&b, &o, 0);
                ch_where_sel(&b, s, &o, 0, sel, ids, NULL, 0);
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
                ch_where_sids(&b, s, q, wm, ids);
            }
            hs_bytes_str(&b, " WHERE ");
            ch_where_rows(&b, q, wm, CH_NARROW);
            if (s->cluster)
                ch_where_sids(&b, s, q, wm, ids);
        } else if (sel == CH_SERIES && !s->cluster) {
            hs_bytes_printf(&b, "] FROM %s.samples", s->db);
            /* (the series' rows first: ClickHouse then reads the other
             * columns of those rows only) */
            hs_bytes_str(&b, " PREWHERE 1");
            ch_where_sids(&b, s, q, wm, ids);
            hs_bytes_str(&b, " WHERE ");
            ch_where_profiles(&b, q, wm);
        } else {
            hs_bytes_printf(&b, "] FROM %s.samples WHERE ", s->db);
            ch_where_profiles(&b, q, wm);
            ch_where_sel(&b, s, q, wm, sel, ids, losers, n_losers);
        }
        hs_bytes_printf(&b, " UNION ALL SELECT toUInt8(%d), toUInt64(0), max(before_ns), toInt64(0), toInt64(0), "
                       "toInt64(0), emptyArrayInt64() FROM %s.retention", CH_ROW_WM, s->db);
        if (ids && ids->fp_check) {
            hs_bytes_str(&b, " UNION ALL ");
            ch_day_rows(&b, s, q, wm,
                     "toUInt8(" CH_STR(CH_ROW_DAY_N) "), toUInt64(min_date), toInt64(sum(rows)), toInt64(0), "
                     "toInt64(0), toInt64(0), emptyArrayInt64()");
        }
        if (stacks) {
            hs_bytes_str(&b, " UNION ALL ");
            merge_stacks(&b, s, q, wm, sel, ids, losers, n_losers, roll, &r, t.n);
        }
        hs_bytes_str(&b, " FORMAT RowBinary");
        rc = ch_run(s, &b, &ans, err, errlen);
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
                hs_err(err, errlen, "out of memory");
                return -1;
            }
            return ch_malformed(err, errlen, "merge");
        }
        if (wm_seen != wm) {
            /* (retention ran since: again with the new watermark, from
             * the start; it only grows, so this ends unless hosts keep
             * answering different ones) */
            ch_wm_keep(s, wm_seen);
            if (++wm_changes > 8) {
                free(losers);
                hs_store_merged_free(out);
                memset(out, 0, sizeof *out);
                hs_err(err, errlen, "clickhouse: the retention watermark kept changing during the merge");
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
            ch_wm_keep(s, wm);
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
        rc = ch_find_losers(s, q, wm, &losers, &n_losers, err, errlen);
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
        hs_err(err, errlen, "%s", terr);
        return trc;
    }
    hs_store_row *rows = out->rows;
    size_t n_rows = out->n_rows;
    out->rows = NULL;
    out->n_rows = 0;
    if (trc == 0 && ch_types_dup(&t, &out->types, &blk)) {
        free(losers);
        free(rows);
        memset(out, 0, sizeof *out);
        hs_err(err, errlen, "out of memory");
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
    rc = ch_run(s, &b, &ans, err, errlen);
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
            hs_err(err, errlen, "out of memory");
            return -1;
        }
        return ch_malformed(err, errlen, "merge");
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
        hs_err(err, errlen, "out of memory");
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
        ch_buf_day(&in, todo[i]);
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
    rc = ch_run(s, &b, &ans, err, errlen);
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
            rc = ch_malformed(err, errlen, "day counts");
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
int ch_merge(hs_store *base, const hs_store_query *q, hs_store_merged *out, char *err, size_t errlen)
{
    ch_store *s = (ch_store *)base;
    if (!s->rollup || !q || !q->service || !q->type || q->n_ids || !(q->n_versions || q->n_labels))
        return merge_request(base, q, NULL, out, err, errlen);
    uint64_t kind = ch_kind_of(q->service, q->type);
    int64_t wm;
    if (!ch_wm_cached(s, &wm))
        wm = 0;
    hs_bytes b = {0}, ans = {0};
    hs_bytes_printf(&b, "SELECT toUInt8(0), sid, toUInt64(0) FROM (SELECT DISTINCT sid FROM %s.series WHERE kind = %" PRIu64,
               s->db, kind);
    ch_where_days(&b, q, 0);
    ch_where_attrs(&b, q);
    hs_bytes_printf(&b, " LIMIT %d)", CH_IN_CHUNK + 1);
    if (!s->cluster) {
        hs_bytes_str(&b, " UNION ALL ");
        ch_day_rows(&b, s, q, wm, "toUInt8(1), toUInt64(min_date), toUInt64(sum(rows))");
    }
    hs_bytes_str(&b, " FORMAT RowBinary");
    if (b.oom) {
        free(b.p);
        memset(out, 0, sizeof *out);
        hs_err(err, errlen, "out of memory");
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
    int rc = ch_run(s, &b, &ans, err, errlen);
    if (rc || !sql) {
        free(sql);
        free(ans.p);
        memset(out, 0, sizeof *out);
        if (rc)
            return rc;
        hs_err(err, errlen, "out of memory");
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
            ch_fp_add(&fp, a, c);
        } else {
            r.bad = 1;
        }
    }
    free(ans.p);
    int trusted = -1;
    if (!v || !day_rows_n || !days)
        hs_err(err, errlen, "out of memory");
    else if (r.bad || ans.n % 17)
        ch_malformed(err, errlen, "series ids");
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
