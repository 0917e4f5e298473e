/* query.c — the query API of `hotspur serve` (GET /api/v1/..., see
 * docs/server.md): parameters, selections and everything answered from the
 * store alone (services, types, versions, labels, series, profiles, the
 * merged pprof). The answers built on the analysis layer (flame graph,
 * functions, diff, source) are in query_shape.c.
 *
 * A query never decodes a stored profile: the store merges the selected
 * profiles (GROUP BY stack), and the merged rows and their stack records
 * become the selection's view (query_view.c: sample index, filters and
 * granularity by the CLI's rules, so a filter means here what it means to
 * `hotspur top`). Only the merged pprof (/api/v1/profile) is rebuilt into
 * an hs_profile (store/stack.h): that file is the answer.
 *
 * Every parameter is checked: an endpoint refuses the ones it does not take
 * (400 naming it), a single-valued one given twice, a malformed value. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/units.h"
#include "report/stacks.h"
#include "server/query_cache.h"
#include "server/query_internal.h"

enum {
    P_SERVICE = 1u << 0,
    P_TYPE = 1u << 1,
    P_TIME = 1u << 2,
    P_VERSION = 1u << 3,
    P_LABEL = 1u << 4,
    P_AGG = 1u << 5,
    P_WEIGHT = 1u << 6,
    P_SI = 1u << 7,
    P_FILTERS = 1u << 8,
    P_GRAN = 1u << 9,
    P_MAXNODES = 1u << 10,
    P_STEP = 1u << 11,
    P_LIMIT = 1u << 12,
    P_BASE = 1u << 13,
    P_FUNCTION = 1u << 14,
    P_SIGNIF = 1u << 15,
    P_ID = 1u << 16,
};
#define P_SEL (P_SERVICE | P_TYPE | P_TIME | P_VERSION | P_LABEL)
#define P_SHAPE (P_AGG | P_WEIGHT | P_SI | P_FILTERS | P_GRAN)

typedef struct {
    const char *name;
    unsigned flag;
    bool multi;  /* repeatable */
    bool baseable; /* base_NAME exists (diff) */
    int opt;     /* analysis option code, or 0 */
} param_def;

static const param_def param_defs[] = {
    {"service", P_SERVICE, false, true, 0},
    {"type", P_TYPE, false, false, 0},
    {"from", P_TIME, false, true, 0},
    {"until", P_TIME, false, true, 0},
    {"version", P_VERSION, true, true, 0},
    {"label", P_LABEL, true, true, 0},
    {"agg", P_AGG, false, false, 0},
    {"weight", P_WEIGHT, false, true, 0},
    {"sample_index", P_SI, false, false, HS_OPT_SAMPLE_INDEX},
    {"focus", P_FILTERS, false, false, HS_OPT_FOCUS},
    {"ignore", P_FILTERS, false, false, HS_OPT_IGNORE},
    {"show", P_FILTERS, false, false, HS_OPT_SHOW},
    {"hide", P_FILTERS, false, false, HS_OPT_HIDE},
    {"show_from", P_FILTERS, false, false, HS_OPT_SHOW_FROM},
    {"tagfocus", P_FILTERS, false, false, HS_OPT_TAGFOCUS},
    {"tagignore", P_FILTERS, false, false, HS_OPT_TAGIGNORE},
    {"granularity", P_GRAN, false, false, 0},
    {"max_nodes", P_MAXNODES, false, false, 0},
    {"step", P_STEP, false, false, 0},
    {"limit", P_LIMIT, false, false, 0},
    {"function", P_FUNCTION, false, false, 0},
    {"significance", P_SIGNIF, false, false, 0},
    {"id", P_ID, false, false, 0},
};
#define N_PARAMS (sizeof param_defs / sizeof param_defs[0])

static int q_services(hs_q *q);
static int q_types(hs_q *q);
static int q_versions(hs_q *q);
static int q_labels(hs_q *q);
static int q_profile(hs_q *q);
static int q_series(hs_q *q);
static int q_profiles(hs_q *q);
static int q_stats(hs_q *q);

typedef struct {
    const char *path;
    unsigned allowed, required;
    int (*fn)(hs_q *q);
} endpoint_def;

static const endpoint_def endpoints[] = {
    {"services", P_SEL, 0, q_services},
    {"types", P_SEL, P_SERVICE, q_types},
    {"versions", P_SEL, P_SERVICE, q_versions},
    {"labels", P_SEL, P_SERVICE, q_labels},
    {"profile", P_SEL | P_ID | P_AGG | P_WEIGHT | P_SI | P_FILTERS, P_SERVICE | P_TYPE, q_profile},
    {"flamegraph", P_SEL | P_ID | P_SHAPE | P_MAXNODES, P_SERVICE | P_TYPE, hs_q_flamegraph},
    {"functions", P_SEL | P_ID | P_SHAPE | P_LIMIT, P_SERVICE | P_TYPE, hs_q_functions},
    {"series", P_SEL | P_AGG | P_WEIGHT | P_SI | P_STEP, P_SERVICE | P_TYPE, q_series},
    {"profiles", P_SEL | P_ID | P_WEIGHT | P_SI | P_LIMIT, P_SERVICE | P_TYPE, q_profiles},
    {"diff", P_SEL | P_SHAPE | P_MAXNODES | P_LIMIT | P_BASE | P_SIGNIF, P_SERVICE | P_TYPE, hs_q_diff},
    {"stats", 0, 0, q_stats},
    {"peek", P_SEL | P_ID | P_SHAPE | P_FUNCTION, P_SERVICE | P_TYPE | P_FUNCTION, hs_q_peek},
    {"sandwich", P_SEL | P_SHAPE | P_MAXNODES | P_BASE | P_FUNCTION, P_SERVICE | P_TYPE | P_FUNCTION, hs_q_sandwich},
    {"source", P_SEL | P_AGG | P_WEIGHT | P_SI | P_FILTERS | P_FUNCTION, P_SERVICE | P_TYPE | P_FUNCTION, hs_q_source},
};

const char *const *hs_query_endpoints(size_t *n)
{
    static const char *names[sizeof endpoints / sizeof endpoints[0]];
    for (size_t i = 0; i < sizeof endpoints / sizeof endpoints[0]; i++)
        names[i] = endpoints[i].path;
    *n = sizeof endpoints / sizeof endpoints[0];
    return names;
}

/* ---- small helpers shared with query_shape.c ---- */

FILE *hs_q_open(char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    return open_memstream(buf, len);
}

int hs_q_finish(hs_q *q, FILE *f, char **buf, size_t *len)
{
    fputc('\n', f);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        free(*buf);
        return hs_respond_error(q->rs, 500, "out of memory writing the answer");
    }
    free(q->rs->body);
    q->rs->body = *buf;
    q->rs->len = *len;
    q->rs->status = 200;
    q->rs->content_type = "application/json";
    return 200;
}

int hs_q_fail(hs_q *q, int status, const char *what, const char *err)
{
    return hs_respond_error(q->rs, status, "%s: %s", what, err);
}

int64_t hs_q_div(const hs_q_side *s)
{
    return s->avg && s->merged.n_profiles > 1 ? s->merged.n_profiles : 1;
}

void hs_q_value(FILE *f, int64_t v, int64_t div)
{
    if (div <= 1 || v % div == 0)
        fprintf(f, "%lld", (long long)(div > 1 ? v / div : v));
    else
        fprintf(f, "%.15g", (double)v / (double)div);
}

void hs_q_header(hs_q *q, FILE *f, const char *sample_type, const char *unit)
{
    fprintf(f, "\"profiles\":%lld,\"agg\":\"%s\",\"sample_type\":", (long long)q->cur.merged.n_profiles,
            q->cur.avg ? "avg" : "sum");
    hs_json_string(f, sample_type);
    fputs(",\"unit\":", f);
    hs_json_string(f, unit);
}

static int store_fail(hs_q *q, int rc, const char *err)
{
    if (rc == HS_STORE_UNAVAILABLE)
        return hs_respond_error(q->rs, 503, "store unavailable: %s", err);
    return hs_respond_error(q->rs, 500, "store: %s", err);
}

/* The answer's buffer (hs_q_open) after a store call that returned rc
 * with err: NULL when that call failed or memory ran out, the error then
 * answered and its status in *status. */
static FILE *answer_open(hs_q *q, int rc, const char *err, char **buf, size_t *len, int *status)
{
    if (rc) {
        *status = store_fail(q, rc, err);
        return NULL;
    }
    FILE *f = hs_q_open(buf, len);
    if (!f)
        *status = hs_respond_error(q->rs, 500, "out of memory");
    return f;
}

/* Drops an answer begun with answer_open; returns status. */
static int answer_drop(FILE *f, char *buf, int status)
{
    fclose(f);
    free(buf);
    return status;
}

/* v as a JSON array of strings. */
static void json_strings(FILE *f, char **v, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        hs_json_string(f, v[i]);
    }
    fputc(']', f);
}

/* "now", "now-90m" (a duration, units.h), unix seconds (maybe fractional). */
static int parse_time(const char *s, int64_t now, int64_t *out)
{
    if (strncmp(s, "now", 3) == 0) {
        const char *p = s + 3;
        if (!*p) {
            *out = now;
            return 0;
        }
        if (*p != '-')
            return -1;
        int64_t ago;
        if (hs_parse_duration_ns(p + 1, &ago) < 0)
            return -1;
        *out = now - ago;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e11)
        return -1;
    *out = (int64_t)llround(v * 1e9);
    return 0;
}

static int parse_long(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* ---- parameters ---- */

static int side_add_label(hs_q *q, hs_q_side *s, const char *kv, const char *pname)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return hs_respond_error(q->rs, 400, "%s wants KEY=VALUE, not '%.100s'", pname, kv);
    if (s->q.n_labels == HS_Q_MAX_MULTI)
        return hs_respond_error(q->rs, 400, "more than %d %s parameters", HS_Q_MAX_MULTI, pname);
    char *key = strndup(kv, (size_t)(eq - kv));
    if (!key || q->n_owned == sizeof q->owned / sizeof q->owned[0]) {
        free(key);
        return hs_respond_error(q->rs, 500, "out of memory");
    }
    q->owned[q->n_owned++] = key;
    s->labels[s->q.n_labels].key = key;
    s->labels[s->q.n_labels].value = eq + 1;
    s->q.n_labels++;
    return 0;
}

/* Apply parameter d (value v) to side s. */
static int side_param(hs_q *q, hs_q_side *s, const param_def *d, const char *pname, const char *v)
{
    if (strcmp(d->name, "service") == 0) {
        if (!*v)
            return hs_respond_error(q->rs, 400, "empty %s", pname);
        s->q.service = v;
    } else if (strcmp(d->name, "type") == 0) {
        if (!*v)
            return hs_respond_error(q->rs, 400, "empty %s", pname);
        s->q.type = v;
    } else if (strcmp(d->name, "from") == 0 || strcmp(d->name, "until") == 0) {
        int64_t t;
        if (parse_time(v, q->now_ns, &t) < 0)
            return hs_respond_error(q->rs, 400,
                                    "bad %s '%.60s' (unix seconds, now, or now-D with D a duration: 90s, 15m, 1.5h, 2d, 1w)", pname, v);
        if (d->name[0] == 'f')
            s->q.from_ns = t;
        else
            s->q.until_ns = t;
    } else if (strcmp(d->name, "version") == 0) {
        if (s->q.n_versions == HS_Q_MAX_MULTI)
            return hs_respond_error(q->rs, 400, "more than %d %s parameters", HS_Q_MAX_MULTI, pname);
        s->versions[s->q.n_versions++] = v;
    } else if (strcmp(d->name, "label") == 0) {
        return side_add_label(q, s, v, pname);
    } else if (strcmp(d->name, "id") == 0) { /* one stored profile (a window), as /api/v1/profiles lists it */
        if (!*v)
            return hs_respond_error(q->rs, 400, "empty %s", pname);
        s->id = v;
        s->q.ids = &s->id;
        s->q.n_ids = 1;
    } else if (strcmp(d->name, "weight") == 0) {
        char *end;
        errno = 0;
        double w = strtod(v, &end);
        if (errno || end == v || *end || !(w > 0 && w <= 100))
            return hs_respond_error(q->rs, 400, "bad %s '%.60s' (a percentage, 0 < P <= 100)", pname, v);
        s->weight = w;
    }
    return 0;
}

#define HS_Q_MAX_REGEX 1024

static int shape_param(hs_q *q, const param_def *d, const char *v)
{
    char msg[256];
    long long n;
    if (d->flag == P_FILTERS && strlen(v) > HS_Q_MAX_REGEX)
        return hs_respond_error(q->rs, 400, "%s: longer than 1024 bytes", d->name);
    if (d->opt == HS_OPT_TAGFOCUS || d->opt == HS_OPT_TAGIGNORE) {
        /* KEY=...: a key this server does not store would match nothing
         * (tagfocus) or everything (tagignore), silently */
        const char *eq = strchr(v, '=');
        for (size_t i = 0; eq && i < q->qc->n_dropped_labels; i++)
            if (strlen(q->qc->dropped_labels[i]) == (size_t)(eq - v) &&
                strncmp(v, q->qc->dropped_labels[i], (size_t)(eq - v)) == 0)
                return hs_respond_error(q->rs, 400,
                                        "%s: this server does not store the label '%s' (hotspur serve "
                                        "--drop-labels); filter the profile file instead (hotspur top --%s)",
                                        d->name, q->qc->dropped_labels[i], d->name);
    }
    if (d->opt) {
        if (hs_analysis_parse_option(&q->o, d->opt, v, msg, sizeof msg) < 0)
            return hs_respond_error(q->rs, 400, "%s: %s", d->name, msg);
        if (d->flag == P_FILTERS)
            q->filtered = true;
    } else if (strcmp(d->name, "agg") == 0) {
        if (strcmp(v, "sum") && strcmp(v, "avg"))
            return hs_respond_error(q->rs, 400, "bad agg '%.60s' (sum or avg)", v);
        q->cur.avg = q->base.avg = v[0] == 'a';
        q->agg_given = true;
    } else if (strcmp(d->name, "granularity") == 0) {
        int code = strcmp(v, "functions") == 0 ? HS_OPT_FUNCTIONS
                   : strcmp(v, "files") == 0   ? HS_OPT_FILES
                   : strcmp(v, "lines") == 0   ? HS_OPT_LINES
                   : strcmp(v, "addresses") == 0 ? HS_OPT_ADDRESSES
                                                 : 0;
        if (!code)
            return hs_respond_error(q->rs, 400, "bad granularity '%.60s' (functions, files, lines, addresses)", v);
        if (hs_analysis_parse_option(&q->o, code, NULL, msg, sizeof msg) < 0)
            return hs_respond_error(q->rs, 400, "granularity: %s", msg);
    } else if (strcmp(d->name, "max_nodes") == 0) {
        if (parse_long(v, 1, 1000000, &n) < 0)
            return hs_respond_error(q->rs, 400, "bad max_nodes '%.60s' (1..1000000)", v);
        q->max_nodes = (int)n;
    } else if (strcmp(d->name, "step") == 0) {
        if (parse_long(v, 1, (long long)366 * 86400, &n) < 0)
            return hs_respond_error(q->rs, 400, "bad step '%.60s' (seconds, 1..31622400)", v);
        q->step_s = n;
    } else if (strcmp(d->name, "limit") == 0) {
        if (parse_long(v, 1, 1000000, &n) < 0)
            return hs_respond_error(q->rs, 400, "bad limit '%.60s' (1..1000000)", v);
        q->limit = (size_t)n;
    } else if (strcmp(d->name, "function") == 0) {
        if (!*v)
            return hs_respond_error(q->rs, 400, "empty function");
        q->function = v;
    } else if (strcmp(d->name, "significance") == 0) {
        if (strcmp(v, "0") && strcmp(v, "1"))
            return hs_respond_error(q->rs, 400, "bad significance '%.60s' (0 or 1)", v);
        q->significance = v[0] == '1';
    }
    return 0;
}

static const param_def *find_param(const char *name)
{
    for (size_t i = 0; i < N_PARAMS; i++)
        if (strcmp(param_defs[i].name, name) == 0)
            return &param_defs[i];
    return NULL;
}

/* Parse every parameter for endpoint e: first the shared ones (cur), then
 * base = cur with each base_X given replacing X. */
static int parse_params(hs_q *q, const endpoint_def *e)
{
    const hs_http_request *rq = q->rq;
    bool seen[2][N_PARAMS] = {{false}};
    unsigned given = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (!(e->allowed & P_BASE))
                break;
            hs_q_side *b = &q->base;
            bool avg = b->avg;
            *b = q->cur;
            b->avg = avg;
            b->q.versions = b->versions;
            b->q.labels = b->labels;
        }
        for (size_t i = 0; i < rq->n_params; i++) {
            const char *name = rq->params[i].key, *v = rq->params[i].value;
            bool is_base = strncmp(name, "base_", 5) == 0 && (e->allowed & P_BASE);
            if (is_base != (pass == 1))
                continue;
            const param_def *d = find_param(is_base ? name + 5 : name);
            if (!d || !(e->allowed & d->flag) || (is_base && !d->baseable))
                return hs_respond_error(q->rs, 400, "unknown parameter '%.60s' for /api/v1/%s (see docs/server.md)",
                                        name, e->path);
            size_t di = (size_t)(d - param_defs);
            hs_q_side *s = is_base ? &q->base : &q->cur;
            if (seen[pass][di] && !d->multi)
                return hs_respond_error(q->rs, 400, "parameter '%.60s' given more than once", name);
            if (!seen[pass][di] && is_base) { /* base_X replaces every X */
                if (d->flag == P_VERSION)
                    s->q.n_versions = 0;
                if (d->flag == P_LABEL)
                    s->q.n_labels = 0;
            }
            seen[pass][di] = true;
            if (!is_base)
                given |= d->flag;
            else
                q->base_given = true;
            int rc = (d->flag & (P_SEL | P_ID)) || d->flag == P_WEIGHT ? side_param(q, s, d, name, v)
                                                              : shape_param(q, d, v);
            if (rc)
                return rc;
        }
    }
    unsigned missing = e->required & ~given;
    if (missing)
        return hs_respond_error(q->rs, 400, "/api/v1/%s needs %s", e->path,
                                missing & P_SERVICE ? "service=S"
                                : missing & P_TYPE  ? "type=T"
                                                    : "function=NAME");
    for (int i = 0; i < 2; i++) {
        const hs_q_side *s = i ? &q->base : &q->cur;
        if (s->q.until_ns && s->q.from_ns >= s->q.until_ns)
            return hs_respond_error(q->rs, 400, "%sfrom must be before %suntil", i ? "base_" : "", i ? "base_" : "");
    }
    return 0;
}

/* ---- the store side ---- */

typedef struct {
    const hs_store_profile_row *r;
    int64_t t;
} wrow;

static int cmp_wrow(const void *a, const void *b)
{
    const wrow *x = a, *y = b;
    if (x->t != y->t)
        return x->t > y->t ? -1 : 1;
    return x->r->start_ns < y->r->start_ns ? -1 : x->r->start_ns > y->r->start_ns;
}

/* weight=P: keep the ceil(P% of N) profiles with the largest total of the
 * sample index, as ids of the query. */
static int apply_weight(hs_q *q, hs_q_side *s)
{
    char err[256];
    int rc = hs_store_profiles(q->qc->store, &s->q, 0, &s->wrows, &s->n_wrows, err, sizeof err);
    if (rc)
        return store_fail(q, rc, err);
    size_t keep = (size_t)ceil(s->weight / 100.0 * (double)s->n_wrows);
    if (keep == 0)
        keep = s->n_wrows ? 1 : 0;
    wrow *w = malloc((s->n_wrows + 1) * sizeof *w);
    s->ids = malloc((keep + 1) * sizeof *s->ids);
    if (!w || !s->ids) {
        free(w);
        return hs_respond_error(q->rs, 500, "out of memory");
    }
    for (size_t i = 0; i < s->n_wrows; i++)
        w[i] = (wrow){&s->wrows[i], s->wrows[i].totals[q->sample_index]};
    qsort(w, s->n_wrows, sizeof *w, cmp_wrow);
    for (size_t i = 0; i < keep; i++)
        s->ids[i] = w[i].r->id;
    free(w);
    s->q.ids = s->ids;
    s->q.n_ids = keep;
    if (keep == 0) { /* nothing to keep: select nothing */
        static const char *const none[] = {""};
        s->q.ids = none;
        s->q.n_ids = 1;
    }
    return 0;
}

hs_profile *hs_q_types_profile(const hs_store_types *t)
{
    hs_profile *p = hs_profile_new();
    if (!p)
        return NULL;
    for (size_t i = 0; i < t->n; i++)
        if (hs_profile_add_sample_type(p, t->type[i], t->unit[i]) < 0) {
            hs_profile_free(p);
            return NULL;
        }
    if (t->default_index >= 0 && (size_t)t->default_index < t->n)
        p->default_sample_type = hs_profile_str(p, t->type[t->default_index]);
    if (t->period_type)
        hs_profile_set_period(p, t->period_type, t->period_unit ? t->period_unit : "", t->period);
    return p;
}

int hs_q_merge(hs_q *q, hs_q_side *s)
{
    if (s->merged_ok)
        return 0;
    char err[256];
    if (s->weight > 0) {
        int rc = apply_weight(q, s);
        if (rc)
            return rc;
    }
    int rc = hs_store_merge(q->qc->store, &s->q, &s->merged, err, sizeof err);
    if (rc)
        return store_fail(q, rc, err);
    s->merged_ok = true;
    return 0;
}

int hs_q_load(hs_q *q, hs_q_side *s)
{
    char err[256];
    int rc = hs_q_merge(q, s);
    if (rc)
        return rc;
    if (s->merged.n_profiles == 0 || s->merged.n_rows == 0)
        s->profile = hs_q_types_profile(&q->types);
    else {
        size_t missing = 0;
        int src = 0;
        s->profile = hs_stack_cache_build(q->qc->cache, q->qc->store, &s->merged, &missing, &src, err, sizeof err);
        if (!s->profile && src)
            return store_fail(q, src, err);
        if (!s->profile)
            return hs_respond_error(q->rs, 500, "rebuilding the merged profile: %s", err);
        if (missing)
            fprintf(stderr, "hotspur serve: %zu stack records missing from the store\n", missing);
    }
    if (!s->profile)
        return hs_respond_error(q->rs, 500, "out of memory");
    return 0;
}

static void side_free(hs_q_side *s)
{
    if (s->merged_ok)
        hs_store_merged_free(&s->merged);
    hs_profile_free(s->profile);
    if (s->wrows)
        hs_store_profile_rows_free(s->wrows, s->n_wrows);
    free(s->ids);
}

/* In-use figures (inuse_space, inuse_objects) are levels, not flows: the
 * heap in use over several windows is their average, never their sum (four
 * windows of 22-63 MB are not 152 MB). Allocations and CPU time sum. */
static bool is_level(const char *sample_type)
{
    return strncmp(sample_type, "inuse_", 6) == 0;
}

/* The sample types of (service, type) and the chosen sample index. */
static int load_types(hs_q *q)
{
    char err[256] = "";
    int rc = hs_store_type_info(q->qc->store, &q->cur.q, &q->types, err, sizeof err);
    if (rc == HS_STORE_UNAVAILABLE)
        return store_fail(q, rc, err);
    if (rc)
        return hs_respond_error(q->rs, 404, "no profiles of service '%.100s' and type '%.60s'", q->cur.q.service,
                                q->cur.q.type);
    q->sample_index = q->types.default_index >= 0 && (size_t)q->types.default_index < q->types.n
                          ? q->types.default_index
                          : (int)q->types.n - 1;
    const char *si = q->o.sample_index;
    if (si) {
        long long n;
        int found = -1;
        for (size_t i = 0; i < q->types.n; i++)
            if (strcmp(q->types.type[i], si) == 0)
                found = (int)i;
        if (found < 0 && parse_long(si, 0, (long long)q->types.n - 1, &n) == 0)
            found = (int)n;
        if (found < 0) {
            char list[256] = "";
            size_t l = 0;
            for (size_t i = 0; i < q->types.n && l < sizeof list; i++)
                l += (size_t)snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", q->types.type[i]);
            return hs_respond_error(q->rs, 400, "no sample type '%.60s' in %s profiles (%s)", si, q->cur.q.type,
                                    list);
        }
        q->sample_index = found;
    }
    if (!q->agg_given && is_level(q->types.type[q->sample_index]))
        q->cur.avg = q->base.avg = true;
    return 0;
}

/* ---- endpoints answered by the store ---- */

static int string_list(hs_q *q, const char *key, int what)
{
    char err[256];
    char **v = NULL;
    size_t n = 0;
    int rc;
    hs_store *st = q->qc->store;
    if (what == HS_STORE_SERVICES)
        rc = hs_store_services(st, &q->cur.q, &v, &n, err, sizeof err);
    else
        rc = hs_store_versions(st, &q->cur.q, &v, &n, err, sizeof err);
    char *buf;
    size_t len;
    int status;
    FILE *f = answer_open(q, rc, err, &buf, &len, &status);
    if (!f) {
        hs_store_strings_free(v, n);
        return status;
    }
    fprintf(f, "{\"%s\":", key);
    json_strings(f, v, n);
    fputc('}', f);
    hs_store_strings_free(v, n);
    return hs_q_finish(q, f, &buf, &len);
}

static int q_services(hs_q *q)
{
    return string_list(q, "services", HS_STORE_SERVICES);
}

static int q_versions(hs_q *q)
{
    return string_list(q, "versions", HS_STORE_VERSIONS);
}

static int q_types(hs_q *q)
{
    char err[256];
    char **v = NULL;
    size_t n = 0;
    int status, rc = hs_store_types_of(q->qc->store, &q->cur.q, &v, &n, err, sizeof err);
    char *buf;
    size_t len;
    FILE *f = answer_open(q, rc, err, &buf, &len, &status);
    if (!f) {
        hs_store_strings_free(v, n);
        return status;
    }
    fputs("{\"types\":[", f);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        hs_store_query tq = q->cur.q;
        tq.type = v[i];
        hs_store_types t;
        rc = hs_store_type_info(q->qc->store, &tq, &t, err, sizeof err);
        if (rc == HS_STORE_UNAVAILABLE) {
            hs_store_strings_free(v, n);
            return answer_drop(f, buf, store_fail(q, rc, err));
        }
        if (rc)
            continue;
        fputs(out++ ? ",{\"name\":" : "{\"name\":", f);
        hs_json_string(f, v[i]);
        fputs(",\"sample_types\":[", f);
        for (size_t k = 0; k < t.n; k++) {
            fputs(k ? ",{\"type\":" : "{\"type\":", f);
            hs_json_string(f, t.type[k]);
            fputs(",\"unit\":", f);
            hs_json_string(f, t.unit[k]);
            fputc('}', f);
        }
        int di = t.default_index >= 0 && (size_t)t.default_index < t.n ? t.default_index : (int)t.n - 1;
        fputs("],\"default\":", f);
        hs_json_string(f, di >= 0 ? t.type[di] : "");
        if (t.period_type) {
            fputs(",\"period_type\":", f);
            hs_json_string(f, t.period_type);
            fputs(",\"period_unit\":", f);
            hs_json_string(f, t.period_unit ? t.period_unit : "");
            fprintf(f, ",\"period\":%lld", (long long)t.period);
        }
        fputc('}', f);
    }
    fputs("]}", f);
    hs_store_strings_free(v, n);
    return hs_q_finish(q, f, &buf, &len);
}

static int q_labels(hs_q *q)
{
    char err[256];
    char **names = NULL;
    size_t n = 0;
    int status, rc = hs_store_label_names(q->qc->store, &q->cur.q, &names, &n, err, sizeof err);
    char *buf;
    size_t len;
    FILE *f = answer_open(q, rc, err, &buf, &len, &status);
    if (!f) {
        hs_store_strings_free(names, n);
        return status;
    }
    fputs("{\"labels\":{", f);
    for (size_t i = 0; i < n; i++) {
        char **vals = NULL;
        size_t nv = 0;
        rc = hs_store_label_values(q->qc->store, &q->cur.q, names[i], &vals, &nv, err, sizeof err);
        if (rc) {
            hs_store_strings_free(names, n);
            return answer_drop(f, buf, store_fail(q, rc, err));
        }
        if (i)
            fputc(',', f);
        hs_json_string(f, names[i]);
        fputc(':', f);
        json_strings(f, vals, nv);
        hs_store_strings_free(vals, nv);
    }
    fputs("}}", f);
    hs_store_strings_free(names, n);
    return hs_q_finish(q, f, &buf, &len);
}

static int q_series(hs_q *q)
{
    hs_q_side *s = &q->cur;
    if (s->weight > 0) {
        int rc = apply_weight(q, s);
        if (rc)
            return rc;
    }
    int64_t until = s->q.until_ns ? s->q.until_ns : q->now_ns;
    int64_t range_s = (until - s->q.from_ns + 999999999) / 1000000000;
    int64_t step = q->step_s;
    if (!step) { /* about 300 points, in multiples of 10 s */
        step = (range_s / 300 + 9) / 10 * 10;
        if (step < 10)
            step = 10;
    }
    if (range_s / step > 100000)
        return hs_respond_error(q->rs, 400, "step %llds gives more than 100000 points over the range",
                                (long long)step);
    hs_store_query sq = s->q;
    sq.until_ns = until;
    hs_store_point *pts = NULL;
    size_t n = 0;
    char err[256];
    int status, rc = hs_store_series(q->qc->store, &sq, step * 1000000000, &pts, &n, err, sizeof err);
    char *buf;
    size_t len;
    FILE *f = answer_open(q, rc, err, &buf, &len, &status);
    if (!f) {
        free(pts);
        return status;
    }
    fprintf(f, "{\"step\":%lld,\"agg\":\"%s\",\"sample_type\":", (long long)step, s->avg ? "avg" : "sum");
    hs_json_string(f, q->types.type[q->sample_index]);
    fputs(",\"unit\":", f);
    hs_json_string(f, q->types.unit[q->sample_index]);
    fputs(",\"points\":[", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s[%lld,", i ? "," : "", (long long)(pts[i].t_ns / 1000000000));
        hs_q_value(f, pts[i].totals[q->sample_index], s->avg ? pts[i].n_profiles : 1);
        fprintf(f, ",%lld]", (long long)pts[i].n_profiles);
    }
    fputs("]}", f);
    free(pts);
    return hs_q_finish(q, f, &buf, &len);
}

/* What the store holds, and the record cache. */
static int q_stats(hs_q *q)
{
    hs_store_stats st;
    char err[256];
    int status, rc = hs_store_stats_get(q->qc->store, &st, err, sizeof err);
    char *buf;
    size_t len;
    FILE *f = answer_open(q, rc, err, &buf, &len, &status);
    if (!f)
        return status;
    fprintf(f, "{\"store\":{\"profiles\":%lld,\"samples\":%lld,\"stacks\":%lld,\"bytes\":%lld}",
            (long long)st.profiles, (long long)st.samples, (long long)st.stacks, (long long)st.bytes);
    if (q->qc->cache) {
        hs_stack_cache_info ci;
        hs_stack_cache_stats(q->qc->cache, &ci);
        fprintf(f, ",\"cache\":{\"records\":%zu,\"bytes\":%zu,\"hits\":%llu,\"misses\":%llu}", ci.entries,
                ci.bytes, (unsigned long long)ci.hits, (unsigned long long)ci.misses);
    }
    if (q->qc->names) {
        hs_names_stats ns;
        hs_names_get_stats(q->qc->names, &ns);
        fprintf(f,
                ",\"names\":{\"named\":%llu,\"unnamed\":%llu,\"cache_hits\":%llu,\"disk_hits\":%llu,"
                "\"debuginfod_ok\":%llu,\"debuginfod_failed\":%llu}",
                (unsigned long long)ns.named, (unsigned long long)ns.unnamed, (unsigned long long)ns.cache_hits,
                (unsigned long long)ns.disk_hits, (unsigned long long)ns.debuginfod_ok,
                (unsigned long long)ns.debuginfod_failed);
    }
    fputc('}', f);
    return hs_q_finish(q, f, &buf, &len);
}

/* Seconds from nanoseconds, exact to the nanosecond. */
static void seconds(FILE *f, int64_t ns)
{
    if (ns % 1000000000 == 0)
        fprintf(f, "%lld", (long long)(ns / 1000000000));
    else
        fprintf(f, "%.9f", (double)ns / 1e9);
}

static int q_profiles(hs_q *q)
{
    hs_q_side *s = &q->cur;
    if (s->weight > 0) {
        int rc = apply_weight(q, s);
        if (rc)
            return rc;
    }
    hs_store_profile_row *rows = NULL;
    size_t n = 0;
    char err[256];
    size_t limit = q->limit ? q->limit : 1000;
    /* one more than shown tells whether the list goes on */
    int status, rc = hs_store_profiles(q->qc->store, &s->q, limit + 1, &rows, &n, err, sizeof err);
    char *buf;
    size_t len;
    FILE *f = answer_open(q, rc, err, &buf, &len, &status);
    if (!f) {
        hs_store_profile_rows_free(rows, n);
        return status;
    }
    fputs("{\"sample_type\":", f);
    hs_json_string(f, q->types.type[q->sample_index]);
    fputs(",\"unit\":", f);
    hs_json_string(f, q->types.unit[q->sample_index]);
    fputs(",\"profiles\":[", f);
    size_t shown = n > limit ? limit : n;
    for (size_t i = 0; i < shown; i++) {
        fputs(i ? ",{\"id\":" : "{\"id\":", f);
        hs_json_string(f, rows[i].id);
        fputs(",\"version\":", f);
        hs_json_string(f, rows[i].version ? rows[i].version : "");
        fputs(",\"start\":", f);
        seconds(f, rows[i].start_ns);
        fputs(",\"duration\":", f);
        seconds(f, rows[i].duration_ns);
        fprintf(f, ",\"total\":%lld}", (long long)rows[i].totals[q->sample_index]);
    }
    fprintf(f, "],\"truncated\":%s}", n > limit ? "true" : "false");
    hs_store_profile_rows_free(rows, n);
    return hs_q_finish(q, f, &buf, &len);
}

/* The merged profile as gzipped pprof: filtered (the kept samples, hidden
 * frames removed) when filters are given, divided by the number of
 * profiles with agg=avg, the chosen sample index as the default. */
static int q_profile(hs_q *q)
{
    hs_q_side *s = &q->cur;
    int rc = hs_q_load(q, s);
    if (rc)
        return rc;
    char err[256];
    hs_profile *p = s->profile;
    if (q->filtered) {
        p = hs_analysis_filter_profile(s->profile, &q->o, err, sizeof err);
        if (!p)
            return hs_respond_error(q->rs, 400, "filters: %s", err);
    }
    /* agg=avg divides every value; without agg, only the levels (a heap
     * profile's inuse_* columns: their average beside the summed allocations) */
    int64_t n = s->merged.n_profiles > 1 ? s->merged.n_profiles : 1, divs[HS_STORE_MAX_VALUES * 4];
    size_t nt = p->n_sample_types < sizeof divs / sizeof divs[0] ? p->n_sample_types : sizeof divs / sizeof divs[0];
    for (size_t k = 0; k < nt; k++)
        divs[k] = q->agg_given ? hs_q_div(s) : is_level(hs_profile_string(p, p->sample_types[k].type)) ? n : 1;
    for (size_t i = 0; i < p->n_samples; i++)
        for (size_t k = 0; k < nt; k++) {
            int64_t v = p->samples[i].values[k], div = divs[k];
            if (div > 1)
                p->samples[i].values[k] = (v >= 0 ? v + div / 2 : v - div / 2) / div;
        }
    if (q->o.sample_index && (size_t)q->sample_index < q->types.n)
        p->default_sample_type = hs_profile_str(p, q->types.type[q->sample_index]);
    void *out = NULL;
    size_t len = 0;
    rc = hs_profile_encode(p, &out, &len, err, sizeof err);
    if (p != s->profile)
        hs_profile_free(p);
    if (rc)
        return hs_respond_error(q->rs, 500, "encoding the profile: %s", err);
    free(q->rs->body);
    q->rs->body = out;
    q->rs->len = len;
    q->rs->status = 200;
    q->rs->content_type = "application/octet-stream";
    snprintf(q->rs->extra_header, sizeof q->rs->extra_header, "X-Hotspur-Profiles: %lld",
             (long long)s->merged.n_profiles);
    return 200;
}

/* ---- entry ---- */

int hs_query_handle(hs_query_ctx *qc, const hs_http_request *rq, hs_http_response *rs)
{
    static const char prefix[] = "/api/v1/";
    const endpoint_def *e = NULL;
    if (strncmp(rq->path, prefix, sizeof prefix - 1) == 0)
        for (size_t i = 0; i < sizeof endpoints / sizeof endpoints[0]; i++)
            if (strcmp(rq->path + sizeof prefix - 1, endpoints[i].path) == 0)
                e = &endpoints[i];
    if (!e)
        return hs_respond_error(rs, 404, "no such endpoint: %.200s (see docs/server.md)", rq->path);
    hs_q *q = calloc(1, sizeof *q);
    if (!q)
        return hs_respond_error(rs, 500, "out of memory");
    q->qc = qc;
    q->rq = rq;
    q->rs = rs;
    q->now_ns = hs_realtime_ns();
    q->max_nodes = 20000;
    q->cur.q.versions = q->cur.versions;
    q->cur.q.labels = q->cur.labels;
    /* the listings cover everything stored; profile queries the last hour */
    if (!(e->required & P_TYPE))
        q->cur.q.from_ns = 0;
    else
        q->cur.q.from_ns = q->now_ns - (int64_t)3600 * 1000000000;
    hs_analysis_options_init(&q->o);
    int rc = parse_params(q, e);
    if (!rc && (e->required & P_TYPE))
        rc = load_types(q);
    if (!rc)
        rc = e->fn(q);
    side_free(&q->cur);
    side_free(&q->base);
    hs_analysis_options_free(&q->o);
    for (size_t i = 0; i < q->n_owned; i++)
        free(q->owned[i]);
    free(q);
    return rs->status;
}
