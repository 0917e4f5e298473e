/* ingest.c — putting uploads into the store: the C entry point
 * (ingest.h: hs_ingest_pprof) and our POST /api/v1/ingest over it, and what
 * Pyroscope's POST /ingest (ingest_pyroscope.c) shares with them. Each
 * upload is checked against hs_limits, decoded (pprof, gzipped or not),
 * turned into store rows by hs_stack_decompose and handed to the batcher
 * (batch.c), which answers only once the rows are durable. A rejected
 * upload gets a code and a one-line message (a 4xx with a JSON message
 * over HTTP) and leaves nothing in the store: nothing is submitted before
 * every check has passed.
 *
 * Bounds (hs_limits): the body (http.c refuses it first), gzip output
 * (inflated into a capped buffer: the gzip trailer's size is never
 * trusted; above 1 MiB the output may not exceed max_ratio times the
 * input), labels per profile and per sample, label key/value length, stack
 * depth and samples (hs_stack_decompose), multipart parts. Unknown query
 * parameters are refused by name, so a typo is not silently ignored. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "report/export.h"
#include "base/clock.h"
#include "server/ingest_internal.h"
#include "server/server.h"
#include "store/stack.h"

#define HS_RATIO_FLOOR ((size_t)1 << 20) /* below this output, no ratio check */
#define HS_MAX_VALUE ((int64_t)1 << 53) /* a sample value, and a profile's total per type */
#define HS_MIN_START_NS (946684800LL * 1000000000LL) /* 2000-01-01 */
#define HS_MAX_AHEAD_NS (86400LL * 1000000000LL)     /* how far in the future a profile may start */
#define HS_MAX_DURATION_NS (7 * 86400LL * 1000000000LL)
#define HS_RETRY_UNAVAILABLE_S 1         /* Retry-After when the store is down */
#define HS_RETRY_FULL_S 30               /* Retry-After when it has no room */

/* ---- small helpers ---- */

/* A printable, bounded copy of untrusted text for an error message. */
const char *hs_shown(const char *s, char *buf, size_t cap)
{
    size_t n = 0;
    for (; s && *s && n + 4 < cap; s++)
        buf[n++] = isprint((unsigned char)*s) ? *s : '?';
    if (s && *s)
        memcpy(buf + n, "...", 3), n += 3;
    buf[n] = '\0';
    return buf;
}

bool hs_name_char(int c, bool dots)
{
    return isalnum(c) || c == '_' || (dots && (c == '.' || c == '-'));
}

/* text of at most max bytes, no control characters. */
bool hs_text_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* Unix seconds (a decimal number, 0 .. year 2262, with at most 9
 * fractional digits: "1764580000" or "1764580000.250000001") to ns. */
static int hs_parse_unix(const char *s, int64_t *ns)
{
    int64_t sec = 0, frac = 0;
    const char *p = s;
    if (!isdigit((unsigned char)*p))
        return -1;
    for (; isdigit((unsigned char)*p); p++)
        if ((sec = sec * 10 + (*p - '0')) > 9000000000LL)
            return -1;
    if (*p == '.') {
        int digits = 0;
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            if (digits < 9)
                frac = frac * 10 + (*p - '0');
            else
                return -1; /* finer than a nanosecond */
        if (digits == 0)
            return -1;
        for (; digits < 9; digits++)
            frac *= 10;
    }
    if (*p)
        return -1;
    *ns = sec * 1000000000LL + frac;
    return 0;
}

/* The first parameter of rq not in allowed, or NULL. */
const char *hs_unknown_param(const hs_http_request *rq, const char *const *allowed)
{
    for (size_t i = 0; i < rq->n_params; i++) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(rq->params[i].key, *a) == 0;
        if (!ok)
            return rq->params[i].key;
    }
    return NULL;
}

/* Parameter key given more than once (other than `repeatable`), or NULL. */
const char *hs_repeated_param(const hs_http_request *rq, const char *repeatable)
{
    for (size_t i = 0; i < rq->n_params; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(rq->params[i].key, rq->params[j].key) == 0 &&
                (!repeatable || strcmp(rq->params[i].key, repeatable) != 0))
                return rq->params[i].key;
    return NULL;
}

/* ---- gzip, capped ---- */

static bool hs_is_gzip(const void *d, size_t len)
{
    const unsigned char *p = d;
    return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

/* Inflate the gzip body in into a malloc'd buffer within lim's bounds
 * (profile.h's bounded gunzip, the codec's). 0, or the hs_ingest_code. */
static int hs_gunzip(const void *in, size_t len, const hs_limits *lim, unsigned char **out, size_t *outlen,
                     char *err, size_t errlen)
{
    hs_gunzip_limits gl = {lim->max_decompressed, lim->max_ratio, HS_RATIO_FLOOR};
    int rc = hs_gunzip_bounded(in, len, &gl, out, outlen, err, errlen);
    return rc == 0                     ? 0
           : rc == HS_GUNZIP_BAD       ? HS_INGEST_BAD
           : rc == HS_GUNZIP_TOO_LARGE ? HS_INGEST_TOO_LARGE
                                       : HS_INGEST_FAILED;
}

/* ---- one request's state (ingest_internal.h) ---- */


void hs_ingest_free(hs_ingest *in)
{
    for (size_t i = 0; i < in->n_scratch; i++)
        free(in->scratch[i]);
    free(in->names);
    free(in->labels);
}

/* r fails with code and a message. Returns code. */
__attribute__((format(printf, 3, 4))) int hs_res_err(hs_ingest_result *r, hs_ingest_code code, const char *fmt,
                                                            ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->code = code;
    return code;
}

/* hs_ing_err with one piece of untrusted text, shown bounded. */
int hs_fail(hs_ingest *in, hs_ingest_code code, const char *fmt, const char *a)
{
    char shown[160];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    return hs_ing_err(in, code, fmt, a ? hs_shown(a, shown, sizeof shown) : "");
#pragma GCC diagnostic pop
}

/* A gzipped payload (at most twice) to plain bytes. 0, or the status answered. */
int hs_unwrap_gzip(hs_ingest *in, const void **data, size_t *len)
{
    char err[256];
    for (int level = 0; hs_is_gzip(*data, *len); level++) {
        if (level == 2 || in->n_scratch == sizeof in->scratch / sizeof in->scratch[0])
            return hs_ing_err(in, HS_INGEST_BAD, "gzip nested more than twice");
        unsigned char *out;
        size_t outlen;
        int st = hs_gunzip(*data, *len, in->lim, &out, &outlen, err, sizeof err);
        if (st)
            return hs_ing_err(in, (hs_ingest_code)st, "%s", err);
        in->scratch[in->n_scratch++] = out;
        *data = out;
        *len = outlen;
    }
    return 0;
}

/* The body without its Content-Encoding. 0, or the hs_ingest_code. */
int hs_ingest_body(hs_ingest *in, const void **data, size_t *len)
{
    const char *ce = in->content_encoding;
    *data = in->body;
    *len = in->body_len;
    if (!ce || !*ce || strcasecmp(ce, "identity") == 0)
        return 0;
    if (strcasecmp(ce, "gzip") != 0 && strcasecmp(ce, "x-gzip") != 0)
        return hs_fail(in, HS_INGEST_ENCODING, "unsupported Content-Encoding %s (gzip or none)", ce);
    if (!hs_is_gzip(*data, *len))
        return hs_ing_err(in, HS_INGEST_BAD, "Content-Encoding: gzip but the body is not gzip");
    return 0; /* hs_unwrap_gzip inflates it */
}

int hs_label_cmp(const void *a, const void *b)
{
    return strcmp(((const hs_store_label *)a)->key, ((const hs_store_label *)b)->key);
}

/* Add a profile label after checking it. 0, or the status answered. */
int hs_add_label(hs_ingest *in, const char *key, const char *value)
{
    if (in->n_labels >= in->lim->max_labels)
        return hs_ing_err(in, HS_INGEST_BAD, "more than %zu labels", in->lim->max_labels);
    if (!*key)
        return hs_ing_err(in, HS_INGEST_BAD, "label with an empty name");
    for (const char *k = key; *k; k++)
        if (!hs_name_char((unsigned char)*k, true))
            return hs_fail(in, HS_INGEST_BAD, "label name %s: use letters, digits, '_', '.', '-'", key);
    if (strlen(key) > in->lim->max_label_len || strlen(value) > in->lim->max_label_len)
        return hs_fail(in, HS_INGEST_BAD, "label %s: name or value longer than the limit", key);
    if (!hs_text_ok(value, in->lim->max_label_len))
        return hs_fail(in, HS_INGEST_BAD, "label %s: control characters in the value", key);
    for (size_t i = 0; i < in->n_labels; i++)
        if (strcmp(in->labels[i].key, key) == 0)
            return hs_fail(in, HS_INGEST_BAD, "label %s given twice", key);
    in->labels[in->n_labels].key = key;
    in->labels[in->n_labels].value = value;
    in->n_labels++;
    return 0;
}

/* from/until parameters (unix seconds, NULL: not given) into m. 0, or the
 * hs_ingest_code in r. */
int hs_parse_times(const char *from, const char *until, hs_ingest_meta *m, hs_ingest_result *r)
{
    char shown[160];
    if (from) {
        if (hs_parse_unix(from, &m->from_ns) != 0)
            return hs_res_err(r, HS_INGEST_BAD, "from=%s: expected unix seconds (up to 9 decimals)",
                              hs_shown(from, shown, sizeof shown));
        m->have_from = true;
    }
    if (until) {
        if (hs_parse_unix(until, &m->until_ns) != 0)
            return hs_res_err(r, HS_INGEST_BAD, "until=%s: expected unix seconds (up to 9 decimals)",
                              hs_shown(until, shown, sizeof shown));
        m->have_until = true;
    }
    return 0;
}

/* The times of m into in, checked. 0, or the hs_ingest_code. */
int hs_ingest_times(hs_ingest *in, const hs_ingest_meta *m)
{
    in->have_from = m->have_from;
    in->from_ns = m->from_ns;
    in->have_until = m->have_until;
    in->until_ns = m->until_ns;
    if (in->have_from && in->have_until && in->until_ns < in->from_ns)
        return hs_ing_err(in, HS_INGEST_BAD, "until is before from");
    return 0;
}

/* ---- sample types -> profile type ---- */

bool hs_has_type(const hs_store_types *t, const char *type, const char *unit)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->type[i], type) == 0 && (!unit || strcmp(t->unit[i], unit) == 0))
            return true;
    return false;
}

/* The profile type its sample types say: cpu, wall, heap, lock, or the
 * last sample type's name. */
const char *hs_infer_type(const hs_store_types *t)
{
    if (hs_has_type(t, "wall", "nanoseconds"))
        return "wall";
    if (hs_has_type(t, "cpu", "nanoseconds"))
        return "cpu";
    for (size_t i = 0; i < t->n; i++)
        if (strncmp(t->type[i], "alloc_", 6) == 0 || strncmp(t->type[i], "inuse_", 6) == 0)
            return "heap";
    if (hs_has_type(t, "objects", "count") && hs_has_type(t, "space", "bytes"))
        return "heap"; /* Node.js (@datadog/pprof) heap profiles */
    if (hs_has_type(t, "contentions", NULL) || hs_has_type(t, "delay", "nanoseconds"))
        return "lock";
    return t->n ? t->type[t->n - 1] : "unknown";
}

bool hs_type_ok(const char *t)
{
    size_t n = strlen(t);
    if (n == 0 || n > HS_MAX_TYPE_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!hs_name_char((unsigned char)t[i], true))
            return false;
    return true;
}

/* ---- decomposed profiles ---- */


void hs_decomposed_free(hs_decomposed *d)
{
    hs_stack_parts_free(d->parts);
    free(d->samples);
    free(d->stacks);
    memset(d, 0, sizeof *d);
}

/* Sample labels are bounded like profile labels. 0, or the status answered. */
static int hs_check_sample_labels(hs_ingest *in, const hs_profile *p)
{
    for (size_t i = 0; i < p->n_samples; i++) {
        const hs_sample *s = &p->samples[i];
        if (s->n_labels > in->lim->max_labels)
            return hs_ing_err(in, HS_INGEST_BAD, "sample %zu has more than %zu labels", i, in->lim->max_labels);
        for (size_t j = 0; j < s->n_labels; j++)
            if (strlen(hs_profile_string(p, s->labels[j].key)) > in->lim->max_label_len ||
                strlen(hs_profile_string(p, s->labels[j].str)) > in->lim->max_label_len)
                return hs_ing_err(in, HS_INGEST_BAD, "sample %zu: a label is longer than %zu bytes", i,
                                        in->lim->max_label_len);
    }
    return 0;
}

/* Values a measurement can have: every sample value in [0, 2^53] and, per
 * sample type, their sum too, so that sums of many stored profiles stay
 * far from int64's end (three uploads of INT64_MAX wrapped a flame graph's
 * total and made /api/v1/series answer 500). A negative value is refused:
 * stored profiles are measurements; a diff is made at query time. */
static int hs_check_values(hs_ingest *in, const hs_profile *p)
{
    int64_t total[HS_STORE_MAX_VALUES] = {0};
    size_t nt = p->n_sample_types < HS_STORE_MAX_VALUES ? p->n_sample_types : HS_STORE_MAX_VALUES;
    for (size_t i = 0; i < p->n_samples; i++)
        for (size_t v = 0; v < nt; v++) {
            int64_t x = p->samples[i].values[v];
            const char *name = hs_profile_string(p, p->sample_types[v].type);
            if (x < 0)
                return hs_ing_err(in, HS_INGEST_BAD,
                                        "sample %zu: negative %s value %" PRId64
                                        " (profiles are stored as measured; diffs are made at query time)",
                                        i, name, x);
            if (x > HS_MAX_VALUE || (total[v] += x) > HS_MAX_VALUE)
                return hs_ing_err(in, HS_INGEST_BAD, "%s values over 2^53 (sample %zu): not a measurement", name, i);
        }
    return 0;
}

/* Decompose p into d with in's bounds. 0, or the status answered. */
int hs_decompose(hs_ingest *in, const hs_profile *p, hs_decomposed *d)
{
    char err[256];
    if (p->n_samples > in->lim->max_samples)
        return hs_ing_err(in, HS_INGEST_TOO_LARGE, "%zu samples: over the limit of %zu", p->n_samples,
                                in->lim->max_samples);
    int vst = hs_check_values(in, p);
    if (vst)
        return vst;
    int st = hs_check_sample_labels(in, p);
    if (st)
        return st;
    hs_stack_options opt = {.drop_labels = in->lim->drop_labels, .n_drop_labels = in->lim->n_drop_labels,
                            .max_depth = in->lim->max_depth, .max_samples = in->lim->max_samples, .memo = in->memo};
    if (hs_stack_decompose(p, &opt, &d->prof, &d->parts, err, sizeof err) != 0)
        return hs_ing_err(in, strstr(err, "out of memory") ? HS_INGEST_FAILED : HS_INGEST_BAD, "profile: %s", err);
    return 0;
}

static int hs_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* out = the columns cols[0..ncols) of src: its samples with a value in
 * them, the stacks those use. 0, or -1 (out of memory). */
int hs_project(const hs_store_profile *src, const int *cols, size_t ncols, hs_decomposed *out)
{
    memset(out, 0, sizeof *out);
    out->prof = *src;
    out->prof.types.n = ncols;
    out->prof.types.default_index = (int)ncols - 1;
    for (size_t c = 0; c < ncols; c++) {
        out->prof.types.type[c] = src->types.type[cols[c]];
        out->prof.types.unit[c] = src->types.unit[cols[c]];
        out->prof.totals[c] = src->totals[cols[c]];
        if (cols[c] == src->types.default_index)
            out->prof.types.default_index = (int)c;
    }
    for (size_t c = ncols; c < HS_STORE_MAX_VALUES; c++)
        out->prof.totals[c] = 0;
    out->samples = malloc((src->n_samples ? src->n_samples : 1) * sizeof *out->samples);
    uint64_t *used = malloc((src->n_samples ? src->n_samples : 1) * sizeof *used);
    out->stacks = malloc((src->n_stacks ? src->n_stacks : 1) * sizeof *out->stacks);
    if (!out->samples || !used || !out->stacks) {
        free(used);
        hs_decomposed_free(out);
        return -1;
    }
    size_t ns = 0;
    for (size_t i = 0; i < src->n_samples; i++) {
        hs_store_sample s = {.stack = src->samples[i].stack};
        bool any = false;
        for (size_t c = 0; c < ncols; c++) {
            s.values[c] = src->samples[i].values[cols[c]];
            any |= s.values[c] != 0;
        }
        if (any) {
            used[ns] = s.stack;
            out->samples[ns++] = s;
        }
    }
    qsort(used, ns, sizeof *used, hs_u64_cmp);
    size_t nk = 0;
    for (size_t i = 0; i < src->n_stacks; i++)
        if (bsearch(&src->stacks[i].hash, used, ns, sizeof *used, hs_u64_cmp))
            out->stacks[nk++] = src->stacks[i];
    free(used);
    out->prof.samples = out->samples;
    out->prof.n_samples = ns;
    out->prof.stacks = out->stacks;
    out->prof.n_stacks = nk;
    return 0;
}

/* Start and duration of a profile: the from/until parameters, or the
 * profile's own time_nanos/duration_nanos (prefer_profile: the profile's
 * when it has them, as Pyroscope does), else now (returns true then). */
static bool hs_times(const hs_ingest *in, const hs_profile *p, bool prefer_profile, int64_t *start,
                     int64_t *dur)
{
    const int64_t year_ns = 365LL * 86400 * 1000000000LL; /* time_nanos before 1971 is bogus */
    bool p_start = p && p->time_nanos >= year_ns, p_dur = p && p->duration_nanos > 0;
    bool q_dur = in->have_from && in->have_until;
    *dur = (prefer_profile || !q_dur) && p_dur ? p->duration_nanos : q_dur ? in->until_ns - in->from_ns : 0;
    if ((prefer_profile || !in->have_from) && p_start)
        *start = p->time_nanos;
    else if (in->have_from)
        *start = in->from_ns;
    else if (in->have_until)
        *start = in->until_ns - *dur;
    else
        return *start = hs_realtime_ns() - *dur, true;
    return false;
}

/* Fill the metadata of d from in; the id is computed from the body and
 * the metadata when the request gave none. */
void hs_fill_meta(hs_ingest *in, hs_decomposed *d, const char *type, const void *body, size_t len,
                         const hs_profile *p, bool prefer_profile)
{
    hs_store_profile *o = &d->prof;
    o->service = in->service;
    o->type = type;
    o->version = in->version ? in->version : "";
    o->labels = in->labels;
    o->n_labels = in->n_labels;
    bool now = hs_times(in, p, prefer_profile, &o->start_ns, &o->duration_ns);
    if (in->id) {
        snprintf(o->id, sizeof o->id, "%s", in->id);
    } else {
        /* the time of arrival is not the upload's: a retry has the same id */
        int64_t start = o->start_ns;
        if (now)
            o->start_ns = 0;
        o->id[0] = '\0';
        hs_stack_profile_id(body, len, o, o->id);
        o->start_ns = start;
    }
}

/* Submit d[0..n) as one put. 0, or the hs_ingest_code. */
int hs_submit(hs_ingest *in, hs_batcher *b, hs_decomposed *d, size_t n)
{
    const hs_store_profile *ps[4];
    int results[4] = {0};
    char err[640];
    for (size_t i = 0; i < n; i++) {
        ps[i] = &d[i].prof;
        const hs_store_profile *o = ps[i];
        int64_t now = hs_realtime_ns();
        if (o->start_ns < HS_MIN_START_NS || o->start_ns > now + HS_MAX_AHEAD_NS)
            return hs_ing_err(in, HS_INGEST_BAD,
                                    "profile start %" PRId64 " ns since the epoch is not a time it could have "
                                    "been taken (from 2000 to a day ahead of the server's clock)",
                                    o->start_ns);
        if (o->duration_ns < 0 || o->duration_ns > HS_MAX_DURATION_NS)
            return hs_ing_err(in, HS_INGEST_BAD, "profile duration %" PRId64 " ns: not in [0, 7 days]",
                                    o->duration_ns);
        for (size_t v = 0; v < o->types.n; v++)
            if (o->totals[v] < 0 || o->totals[v] > HS_MAX_VALUE)
                return hs_ing_err(in, HS_INGEST_BAD, "%s values sum to %" PRId64 ": not in [0, 2^53]",
                                        o->types.type[v], o->totals[v]);
    }
    int rc = hs_batcher_submit_many(b, ps, n, results, err, sizeof err);
    if (rc == HS_STORE_UNAVAILABLE || rc == HS_STORE_FULL) {
        in->res->retry_after_s = rc == HS_STORE_FULL ? HS_RETRY_FULL_S : HS_RETRY_UNAVAILABLE_S;
        return hs_ing_err(in, HS_INGEST_BUSY, "%s, retry: %s", rc == HS_STORE_FULL ? "store full" : "store unavailable",
                          err);
    }
    if (rc == HS_STORE_REFUSED) /* the upload conflicts with what is stored: not to be retried */
        return hs_ing_err(in, HS_INGEST_CONFLICT, "%s", err);
    if (rc != 0)
        return hs_ing_err(in, HS_INGEST_FAILED, "store: %s", err);
    hs_ingest_result *r = in->res;
    r->n_ids = n;
    for (size_t i = 0; i < n; i++) {
        r->stored += !results[i];
        r->duplicate[i] = results[i] != 0;
        snprintf(r->ids[i], sizeof r->ids[i], "%s", d[i].prof.id);
    }
    r->code = HS_INGEST_OK;
    return 0;
}

int hs_ingest_begin(hs_ingest *in, hs_batcher *b, const hs_limits *lim, const void *body, size_t len,
                           const char *content_encoding, hs_ingest_result *res)
{
    memset(in, 0, sizeof *in);
    memset(res, 0, sizeof *res);
    in->lim = lim;
    in->res = res;
    in->body = body;
    in->body_len = len;
    in->content_encoding = content_encoding;
    in->memo = hs_batcher_stack_memo(b);
    in->namer = hs_batcher_names(b);
    in->labels = calloc(lim->max_labels + 1, sizeof *in->labels);
    if (!in->labels)
        return hs_ing_err(in, HS_INGEST_FAILED, "out of memory");
    if (len > lim->max_body)
        return hs_ing_err(in, HS_INGEST_TOO_LARGE, "request body is over the limit of %zu bytes", lim->max_body);
    return 0;
}

/* Decode a pprof body (plain: after hs_unwrap_gzip). NULL: answered. */
hs_profile *hs_decode_pprof(hs_ingest *in, const void *data, size_t len)
{
    char err[256];
    if (len == 0) {
        hs_ing_err(in, HS_INGEST_BAD, "empty profile");
        return NULL;
    }
    hs_profile *p = hs_profile_decode(data, len, err, sizeof err);
    if (!p)
        hs_ing_err(in, HS_INGEST_BAD, "not a pprof profile: %s", err);
    /* frames sent as addresses: named now from the debug info at hand, the
     * rest kept with their build IDs for later (names.h) */
    else if (in->namer && p->n_samples <= in->lim->max_samples && hs_names_wanted(p) &&
             hs_names_profile(in->namer, p) < 0) {
        hs_ing_err(in, HS_INGEST_FAILED, "out of memory naming the profile's frames");
        hs_profile_free(p);
        p = NULL;
    }
    return p;
}

/* ---- a pprof profile: the entry point (ingest.h) ---- */

static const hs_ingest_code hs_code_list[] = {HS_INGEST_OK, HS_INGEST_BAD, HS_INGEST_TOO_LARGE, HS_INGEST_ENCODING,
                                              HS_INGEST_CONFLICT, HS_INGEST_BUSY, HS_INGEST_FAILED};
static const int hs_code_status[] = {200, 400, 413, 415, 409, 503, 500};

int hs_ingest_http_status(hs_ingest_code code)
{
    for (size_t i = 0; i < sizeof hs_code_list / sizeof hs_code_list[0]; i++)
        if (hs_code_list[i] == code)
            return hs_code_status[i];
    return 500;
}

int hs_ingest_pprof(hs_batcher *b, const hs_limits *lim, const hs_ingest_meta *m, const void *body, size_t len,
                    hs_ingest_result *res)
{
    hs_ingest in;
    hs_decomposed d = {0};
    hs_profile *p = NULL;
    bool submitted = false;
    hs_batcher_expect(b, 1);
    int st = hs_ingest_begin(&in, b, lim, body, len, m->content_encoding, res);
    if (st)
        goto out;
    in.service = m->service;
    if (!in.service || !*in.service) {
        st = hs_ing_err(&in, HS_INGEST_BAD, "missing parameter service");
        goto out;
    }
    if (!hs_text_ok(in.service, lim->max_label_len)) {
        st = hs_ing_err(&in, HS_INGEST_BAD, "service: control characters or longer than %zu bytes", lim->max_label_len);
        goto out;
    }
    in.version = m->version;
    if (in.version && !hs_text_ok(in.version, lim->max_label_len)) {
        st = hs_ing_err(&in, HS_INGEST_BAD, "version: control characters or longer than %zu bytes", lim->max_label_len);
        goto out;
    }
    in.type = m->type;
    if (in.type && !hs_type_ok(in.type)) {
        st = hs_fail(&in, HS_INGEST_BAD, "type=%s: up to 64 letters, digits, '_', '.', '-'", in.type);
        goto out;
    }
    in.id = m->id;
    if (in.id) {
        size_t n = strlen(in.id);
        bool ok = n > 0 && n <= HS_MAX_ID;
        for (size_t i = 0; ok && i < n; i++)
            ok = isalnum((unsigned char)in.id[i]) || in.id[i] == '_' || in.id[i] == '-';
        if (!ok) {
            st = hs_fail(&in, HS_INGEST_BAD, "id=%s: 1 to 32 of [A-Za-z0-9_-]", in.id);
            goto out;
        }
    }
    /* labels KEY=VALUE: keys and values are cut out of one copy */
    size_t total = 1;
    for (size_t i = 0; i < m->n_labels; i++)
        total += strlen(m->labels[i]) + 1;
    if (!(in.names = malloc(total))) {
        st = hs_ing_err(&in, HS_INGEST_FAILED, "out of memory");
        goto out;
    }
    for (size_t i = 0, off = 0; i < m->n_labels; i++) {
        char *kv = in.names + off, *eq;
        size_t l = strlen(m->labels[i]) + 1;
        off += l;
        memcpy(kv, m->labels[i], l);
        if (!(eq = strchr(kv, '='))) {
            st = hs_fail(&in, HS_INGEST_BAD, "label=%s: expected label=KEY=VALUE", kv);
            goto out;
        }
        *eq = '\0';
        if ((st = hs_add_label(&in, kv, eq + 1)))
            goto out;
    }
    if ((st = hs_ingest_times(&in, m)))
        goto out;
    const void *data;
    size_t dlen;
    if ((st = hs_ingest_body(&in, &data, &dlen)) || (st = hs_unwrap_gzip(&in, &data, &dlen)))
        goto out;
    if (!(p = hs_decode_pprof(&in, data, dlen))) {
        st = res->code;
        goto out;
    }
    if ((st = hs_decompose(&in, p, &d)))
        goto out;
    const char *type = in.type ? in.type : hs_infer_type(&d.prof.types);
    if (!hs_type_ok(type)) {
        st = hs_fail(&in, HS_INGEST_BAD, "sample type %s is not a usable type name; give type=", type);
        goto out;
    }
    qsort(in.labels, in.n_labels, sizeof *in.labels, hs_label_cmp);
    hs_fill_meta(&in, &d, type, body, len, p, false);
    submitted = true;
    st = hs_submit(&in, b, &d, 1);
out:
    if (!submitted)
        hs_batcher_expect(b, -1);
    hs_decomposed_free(&d);
    hs_profile_free(p);
    hs_ingest_free(&in);
    return st;
}

static const char *const hs_native_params[] = {"service", "type", "version", "label", "from", "until", "id", NULL};

int hs_ingest_meta_from_params(const hs_param *ps, size_t n, hs_ingest_meta *m, const char **labels,
                               hs_ingest_result *r)
{
    memset(m, 0, sizeof *m);
    memset(r, 0, sizeof *r);
    hs_http_request rq = {.params = ps, .n_params = n}; /* for the parameter helpers */
    char shown[160];
    const char *bad = hs_unknown_param(&rq, hs_native_params);
    if (bad)
        return hs_res_err(r, HS_INGEST_BAD, "unknown parameter %s", hs_shown(bad, shown, sizeof shown));
    if ((bad = hs_repeated_param(&rq, "label")))
        return hs_res_err(r, HS_INGEST_BAD, "parameter %s given twice", hs_shown(bad, shown, sizeof shown));
    m->service = hs_param_get(&rq, "service");
    m->version = hs_param_get(&rq, "version");
    m->type = hs_param_get(&rq, "type");
    m->id = hs_param_get(&rq, "id");
    m->labels = labels;
    for (size_t i = 0; i < n; i++)
        if (strcmp(ps[i].key, "label") == 0)
            labels[m->n_labels++] = ps[i].value;
    return hs_parse_times(hs_param_get(&rq, "from"), hs_param_get(&rq, "until"), m, r);
}

/* The HTTP answer of r. Returns its status. */
int hs_ingest_respond(hs_http_response *rs, const hs_ingest_result *r)
{
    int status = hs_ingest_http_status(r->code);
    if (r->code != HS_INGEST_OK) {
        hs_respond_error(rs, status, "%s", r->msg);
        if (r->retry_after_s)
            snprintf(rs->extra_header, sizeof rs->extra_header, "Retry-After: %d", r->retry_after_s);
        return status;
    }
    size_t cap = 96 + r->n_ids * 48;
    char *body = malloc(cap);
    if (!body)
        return hs_respond_error(rs, 500, "out of memory");
    size_t len;
    if (r->n_ids == 1) {
        len = (size_t)snprintf(body, cap, "{\"stored\":%zu,%s\"id\":\"%s\"}\n", r->stored,
                               r->duplicate[0] ? "\"duplicate\":true," : "", r->ids[0]);
    } else {
        len = (size_t)snprintf(body, cap, "{\"stored\":%zu,\"duplicates\":%zu,\"ids\":[", r->stored,
                               r->n_ids - r->stored);
        for (size_t i = 0; i < r->n_ids; i++)
            len += (size_t)snprintf(body + len, cap - len, "%s\"%s\"", i ? "," : "", r->ids[i]);
        len += (size_t)snprintf(body + len, cap - len, "]}\n");
    }
    free(rs->body);
    rs->body = body;
    rs->len = len;
    rs->status = 200;
    rs->content_type = "application/json";
    return 200;
}

/* ---- POST /api/v1/ingest ---- */

int hs_ingest_native(hs_batcher *b, const hs_limits *lim, const hs_http_request *rq, hs_http_response *rs)
{
    hs_ingest_result r;
    hs_ingest_meta m;
    const char **labels = calloc(rq->n_params + 1, sizeof *labels);
    if (!labels)
        return hs_respond_error(rs, 500, "out of memory");
    if (hs_ingest_meta_from_params(rq->params, rq->n_params, &m, labels, &r) == 0) {
        m.content_encoding = rq->content_encoding;
        hs_ingest_pprof(b, lim, &m, rq->body, rq->body_len, &r);
    }
    free(labels);
    return hs_ingest_respond(rs, &r);
}
