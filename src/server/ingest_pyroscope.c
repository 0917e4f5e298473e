/* ingest_pyroscope.c — Pyroscope's POST /ingest, on ingest.c's checks,
 * decomposition and batched put (ingest_internal.h).
 *
 * Pyroscope's wire format, as its clients send it:
 *   name=APP[.TYPE]{k=v,...}  the application (Pyroscope's "segment key"):
 *       APP and tag keys are [A-Za-z0-9_.-]+; a final ".TYPE" that
 *       is one of Pyroscope's profile type names (cpu, wall, alloc_space,
 *       mutex_count, ...) is the type, else it belongs to APP. APP is our
 *       service (a service_name tag wins, APP then becomes label app_name);
 *       the tags are profile labels, spyName becomes label pyroscope_spy.
 *   from, until   unix seconds (ours: up to 9 decimals); a pprof's own time_nanos/duration_nanos win
 *       when set (as Pyroscope does), folded text uses them.
 *   format        pprof (raw body, gzipped or not) or multipart/form-data
 *       (Content-Type) with a "profile" part and an optional
 *       "sample_type_config" part (JSON, checked but not used: our sample
 *       types come from the pprof itself); folded / groups / absent: text
 *       "a;b;c 12" per line (root first); lines: "a;b;c" per line, count 1.
 *   sampleRate    Hz (default 100) for folded cpu/wall: each sample is worth
 *       1e9/sampleRate ns, so the profile has samples/count and
 *       cpu|wall/nanoseconds like ours.
 *   units, aggregationType  checked; units names folded text's unit.
 * A pprof's type comes from its sample types (as for our endpoint); a
 * Node.js wall profile that also has cpu/nanoseconds (collectCpuTime)
 * becomes two profiles, wall and cpu, stored in one put. */
#define _GNU_SOURCE /* memmem, strcasestr */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report/export.h"
#include "server/ingest_internal.h"

/* ---- POST /ingest (Pyroscope) ---- */

/* Pyroscope's profile type names (the ".TYPE" of name=APP.TYPE{...}) and
 * what folded text of that type holds. */
typedef struct {
    const char *suffix, *type, *st_type, *st_unit;
} hs_pyro_type;

static const hs_pyro_type hs_pyro_types[] = {
    {"cpu", "cpu", "cpu", "nanoseconds"},
    {"itimer", "cpu", "cpu", "nanoseconds"},
    {"wall", "wall", "wall", "nanoseconds"},
    {"seconds", "wall", "wall", "nanoseconds"},
    {"nanoseconds", "wall", "wall", "nanoseconds"},
    {"microseconds", "wall", "wall", "nanoseconds"},
    {"milliseconds", "wall", "wall", "nanoseconds"},
    {"inuse_objects", "inuse_objects", "inuse_objects", "count"},
    {"inuse_space", "inuse_space", "inuse_space", "bytes"},
    {"alloc_objects", "alloc_objects", "alloc_objects", "count"},
    {"alloc_space", "alloc_space", "alloc_space", "bytes"},
    {"goroutines", "goroutines", "goroutines", "count"},
    {"mutex_count", "mutex_count", "contentions", "count"},
    {"mutex_duration", "mutex_duration", "delay", "nanoseconds"},
    {"block_count", "block_count", "contentions", "count"},
    {"block_duration", "block_duration", "delay", "nanoseconds"},
    {"lock_count", "lock_count", "contentions", "count"},
    {"lock_duration", "lock_duration", "delay", "nanoseconds"},
    {"alloc_in_new_tlab_objects", "alloc_in_new_tlab_objects", "alloc_in_new_tlab_objects", "count"},
    {"alloc_in_new_tlab_bytes", "alloc_in_new_tlab_bytes", "alloc_in_new_tlab_bytes", "bytes"},
    {"alloc_outside_tlab_objects", "alloc_outside_tlab_objects", "alloc_outside_tlab_objects", "count"},
    {"alloc_outside_tlab_bytes", "alloc_outside_tlab_bytes", "alloc_outside_tlab_bytes", "bytes"},
    {"live", "live", "live", "count"},
    {"exceptions", "exceptions", "samples", "count"},
    {"bytes", "bytes", "samples", "bytes"},
};

static const hs_pyro_type *hs_pyro_type_of(const char *suffix)
{
    for (size_t i = 0; i < sizeof hs_pyro_types / sizeof hs_pyro_types[0]; i++)
        if (strcmp(hs_pyro_types[i].suffix, suffix) == 0)
            return &hs_pyro_types[i];
    return NULL;
}

/* Parse name=APP[.TYPE]{k=v,...} into in->service and in->labels (strings
 * in in->names); *pt is the ".TYPE" or NULL. 0, or the status answered. */
static int hs_pyro_name(hs_ingest *in, const char *name, const hs_pyro_type **pt)
{
    *pt = NULL;
    if (!name || !*name)
        return hs_ing_err(in, HS_INGEST_BAD, "missing parameter name (APP{k=v,...})");
    size_t n = strlen(name);
    if (n > 4096)
        return hs_ing_err(in, HS_INGEST_BAD, "name is longer than 4096 bytes");
    char *b = malloc(n + 1);
    if (!b)
        return hs_ing_err(in, HS_INGEST_FAILED, "out of memory");
    memcpy(b, name, n + 1);
    in->names = b;
    char *brace = strchr(b, '{'), *tags = NULL;
    if (brace) {
        char *close = strchr(brace, '}');
        if (!close)
            return hs_fail(in, HS_INGEST_BAD, "name=%s: '{' without '}'", name);
        *brace = '\0';
        *close = '\0'; /* Pyroscope ignores what follows '}' */
        tags = brace + 1;
    }
    /* APP, trimmed */
    char *app = b;
    while (*app == ' ')
        app++;
    for (char *e = app + strlen(app); e > app && e[-1] == ' ';)
        *--e = '\0';
    if (!*app)
        return hs_ing_err(in, HS_INGEST_BAD, "name: the application name is empty");
    for (const char *c = app; *c; c++)
        if (!hs_name_char((unsigned char)*c, true))
            return hs_fail(in, HS_INGEST_BAD, "name=%s: the application name may have letters, digits, '_', '.', '-'", name);
    if (strlen(app) > in->lim->max_label_len)
        return hs_ing_err(in, HS_INGEST_BAD, "name: the application name is longer than %zu bytes",
                                in->lim->max_label_len);
    char *dot = strrchr(app, '.');
    if (dot && dot > app && (*pt = hs_pyro_type_of(dot + 1)))
        *dot = '\0';
    const char *service_name = NULL;
    for (char *t = tags; t && *t;) {
        char *comma = strchr(t, ','), *next = comma ? comma + 1 : NULL;
        if (comma)
            *comma = '\0';
        char *eq = strchr(t, '=');
        if (!eq) {
            /* "{}" or a trailing ',' are fine; a key without value is not */
            for (char *c = t; *c; c++)
                if (*c != ' ')
                    return hs_fail(in, HS_INGEST_BAD, "name=%s: a tag without '=' value", name);
            t = next;
            continue;
        }
        *eq = '\0';
        char *k = t, *v = eq + 1;
        while (*k == ' ')
            k++;
        for (char *e = k + strlen(k); e > k && e[-1] == ' ';)
            *--e = '\0';
        while (*v == ' ')
            v++;
        for (char *e = v + strlen(v); e > v && e[-1] == ' ';)
            *--e = '\0';
        /* Pyroscope's own rule is [A-Za-z0-9_]; its Node.js client sends
         * otel.scope.name=..., so dots (and '-') are accepted, as in ours */
        for (const char *c = k; *c; c++)
            if (!hs_name_char((unsigned char)*c, true))
                return hs_fail(in, HS_INGEST_BAD, "name=%s: tag names may have letters, digits, '_', '.', '-'", name);
        if (strcmp(k, "service_name") == 0) {
            if (!*v)
                return hs_ing_err(in, HS_INGEST_BAD, "name: empty service_name tag");
            service_name = v;
        } else {
            int st = hs_add_label(in, k, v);
            if (st)
                return st;
        }
        t = next;
    }
    in->service = app;
    if (service_name) {
        if (!hs_text_ok(service_name, in->lim->max_label_len))
            return hs_ing_err(in, HS_INGEST_BAD, "service_name: too long or control characters");
        int st = hs_add_label(in, "app_name", app);
        if (st)
            return st;
        in->service = service_name;
    }
    return 0;
}

/* One part of a multipart/form-data body. */
typedef struct {
    char name[64];
    const unsigned char *data;
    size_t len;
} hs_part;

static const char *hs_memstr(const char *h, size_t hl, const char *n, size_t nl)
{
    return nl <= hl ? memmem(h, hl, n, nl) : NULL;
}

/* Split a multipart/form-data body. 0, or the status answered. */
static int hs_multipart(hs_ingest *in, const char *ctype, const void *body, size_t len, hs_part *parts,
                        size_t *n_parts)
{
    const char *bp = strcasestr(ctype, "boundary=");
    if (!bp)
        return hs_ing_err(in, HS_INGEST_BAD, "multipart/form-data without a boundary");
    bp += 9;
    char delim[256] = "\r\n--";
    size_t dl = 4;
    bool quoted = *bp == '"';
    if (quoted)
        bp++;
    while (*bp && (quoted ? *bp != '"' : (*bp != ';' && *bp != ' ')) && dl < sizeof delim - 1)
        delim[dl++] = *bp++;
    delim[dl] = '\0';
    if (dl == 4 || dl > 4 + 200)
        return hs_ing_err(in, HS_INGEST_BAD, "multipart boundary is empty or too long");
    const char *b = body, *end = b + len;
    /* the first delimiter may start the body (no CRLF before it) */
    const char *p = len >= dl - 2 && memcmp(b, delim + 2, dl - 2) == 0 ? b : hs_memstr(b, len, delim, dl);
    if (!p)
        return hs_ing_err(in, HS_INGEST_BAD, "multipart body without its boundary");
    p += p == b ? dl - 2 : dl;
    *n_parts = 0;
    for (;;) {
        if (end - p >= 2 && p[0] == '-' && p[1] == '-')
            return 0; /* closing delimiter */
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (end - p >= 2 && p[0] == '\r' && p[1] == '\n')
            p += 2;
        else
            return hs_ing_err(in, HS_INGEST_BAD, "multipart: malformed delimiter line");
        const char *hend = hs_memstr(p, (size_t)(end - p), "\r\n\r\n", 4);
        if (!hend || hend - p > HS_MAX_PART_HEADER)
            return hs_ing_err(in, HS_INGEST_BAD, "multipart: part headers missing or over 4096 bytes");
        if (*n_parts == HS_MAX_PARTS)
            return hs_ing_err(in, HS_INGEST_BAD, "multipart: more than %d parts", HS_MAX_PARTS);
        hs_part *part = &parts[(*n_parts)++];
        part->name[0] = '\0';
        /* Content-Disposition: form-data; name="profile"; filename="..." */
        for (const char *h = p; h < hend;) {
            const char *eol = hs_memstr(h, (size_t)(hend + 2 - h), "\r\n", 2);
            size_t hl = (size_t)(eol - h);
            if (hl > 20 && strncasecmp(h, "content-disposition:", 20) == 0) {
                char line[HS_MAX_PART_HEADER + 1];
                memcpy(line, h, hl);
                line[hl] = '\0';
                const char *nm = strcasestr(line, "; name=");
                if (!nm)
                    nm = strcasestr(line, ";name=");
                if (nm) {
                    nm = strchr(nm, '=') + 1;
                    bool q = *nm == '"';
                    nm += q;
                    size_t k = 0;
                    while (*nm && (q ? *nm != '"' : (*nm != ';' && *nm != ' ')) && k < sizeof part->name - 1)
                        part->name[k++] = *nm++;
                    part->name[k] = '\0';
                }
            }
            h = eol + 2;
        }
        if (!part->name[0])
            return hs_ing_err(in, HS_INGEST_BAD, "multipart: a part without a form-data name");
        const char *data = hend + 4;
        const char *next = hs_memstr(data, (size_t)(end - data), delim, dl);
        if (!next)
            return hs_ing_err(in, HS_INGEST_BAD, "multipart: part %s is not terminated", part->name);
        part->data = (const unsigned char *)data;
        part->len = (size_t)(next - data);
        p = next + dl;
    }
}

/* Folded ("a;b;c 12") or lines ("a;b;c") text to a profile. NULL: answered. */
static hs_profile *hs_pyro_folded(hs_ingest *in, const char *data, size_t len, bool lines)
{
    char err[256];
    char *conv = NULL;
    if (lines) { /* each line is one sample: append " 1" */
        size_t nl = 1;
        for (size_t i = 0; i < len; i++)
            nl += data[i] == '\n';
        if (!(conv = malloc(len + nl * 3 + 1))) {
            hs_ing_err(in, HS_INGEST_FAILED, "out of memory");
            return NULL;
        }
        size_t o = 0;
        for (size_t i = 0; i < len;) {
            const char *e = memchr(data + i, '\n', len - i);
            size_t ll = e ? (size_t)(e - (data + i)) : len - i;
            if (ll && data[i + ll - 1] == '\r')
                ll--;
            memcpy(conv + o, data + i, ll);
            o += ll;
            if (ll)
                memcpy(conv + o, " 1", 2), o += 2;
            conv[o++] = '\n';
            i += (e ? (size_t)(e - (data + i)) + 1 : len - i);
        }
        data = conv;
        len = o;
    }
    hs_profile *p = hs_import_collapsed(data, len, err, sizeof err);
    if (!p) {
        free(conv);
        hs_ing_err(in, HS_INGEST_BAD, "%s", err);
        return NULL;
    }
    /* Pyroscope's folded counts are integers: the importer's exact scaling
     * of fractional counts (a "count/10" unit) is not what a client means. */
    if (strcmp(hs_profile_string(p, p->sample_types[0].unit), "count") != 0) {
        size_t line = 1;
        for (size_t i = 0; i < len; i++) {
            size_t e = i;
            while (e < len && data[e] != '\n')
                e++;
            size_t v = e;
            while (v > i && data[v - 1] != ' ')
                v--;
            if (memchr(data + v, '.', e - v))
                break;
            line++;
            i = e;
        }
        hs_ing_err(in, HS_INGEST_BAD, "collapsed line %zu: fractional count (counts are whole numbers)", line);
        free(conv);
        hs_profile_free(p);
        return NULL;
    }
    free(conv);
    for (size_t i = 0; i < p->n_samples; i++)
        if (p->samples[i].values[0] < 0) {
            hs_ing_err(in, HS_INGEST_BAD, "folded stack %zu: negative count", i + 1);
            hs_profile_free(p);
            return NULL;
        }
    return p;
}

/* Give the one-column (samples/count) decomposition of folded text the
 * sample types of its Pyroscope type. 0, or the status answered. */
static int hs_pyro_folded_types(hs_ingest *in, hs_decomposed *d, const hs_pyro_type *pt, const char *units,
                                long rate)
{
    hs_store_profile *o = &d->prof;
    static const char *const unit_of[][2] = {{"samples", "count"}, {"objects", "count"}, {"goroutines", "count"},
                                             {"bytes", "bytes"}, {"lock_samples", "count"},
                                             {"lock_nanoseconds", "nanoseconds"}};
    bool timed = pt ? strcmp(pt->st_unit, "nanoseconds") == 0 && (!strcmp(pt->type, "cpu") || !strcmp(pt->type, "wall"))
                    : !units || strcmp(units, "samples") == 0;
    if (timed) {
        const char *t = pt ? pt->type : "cpu";
        int64_t period = 1000000000LL / rate;
        hs_store_sample *s = malloc((o->n_samples ? o->n_samples : 1) * sizeof *s);
        if (!s)
            return hs_ing_err(in, HS_INGEST_FAILED, "out of memory");
        for (size_t i = 0; i < o->n_samples; i++) {
            if (o->samples[i].values[0] > INT64_MAX / period) {
                free(s);
                return hs_ing_err(in, HS_INGEST_BAD, "folded count too large");
            }
            s[i] = (hs_store_sample){.stack = o->samples[i].stack,
                                     .values = {o->samples[i].values[0], o->samples[i].values[0] * period}};
        }
        if (o->totals[0] > INT64_MAX / period) {
            free(s);
            return hs_ing_err(in, HS_INGEST_BAD, "folded total too large");
        }
        d->samples = s;
        o->samples = s;
        o->types.n = 2;
        o->types.type[0] = "samples";
        o->types.unit[0] = "count";
        o->types.type[1] = t;
        o->types.unit[1] = "nanoseconds";
        o->types.default_index = 1;
        o->types.period_type = t;
        o->types.period_unit = "nanoseconds";
        o->types.period = period;
        o->totals[1] = o->totals[0] * period;
        o->type = t;
        return 0;
    }
    if (pt) {
        o->type = pt->type;
        o->types.type[0] = pt->st_type;
        o->types.unit[0] = pt->st_unit;
    } else {
        const char *u = "count";
        for (size_t i = 0; i < sizeof unit_of / sizeof unit_of[0]; i++)
            if (strcmp(unit_of[i][0], units) == 0)
                u = unit_of[i][1];
        o->type = units;
        o->types.type[0] = "samples";
        o->types.unit[0] = u;
    }
    o->types.period_type = o->types.type[0];
    o->types.period_unit = o->types.unit[0];
    o->types.period = 1;
    return 0;
}

static const char *const hs_pyro_params[] = {"name", "from", "until", "format", "sampleRate", "spyName",
                                             "units", "aggregationType", NULL};

int hs_ingest_pyroscope(hs_batcher *b, const hs_limits *lim, const hs_http_request *rq, hs_http_response *rs)
{
    hs_ingest in;
    hs_decomposed d[2];
    memset(d, 0, sizeof d);
    size_t nd = 0;
    hs_profile *p = NULL;
    const hs_pyro_type *pt = NULL;
    bool submitted = false;
    hs_ingest_result res;
    hs_ingest_meta times = {0};
    hs_batcher_expect(b, 1);
    int st = hs_ingest_begin(&in, b, lim, rq->body, rq->body_len, rq->content_encoding, &res);
    in.rq = rq;
    if (st)
        goto out;
    const char *bad = hs_unknown_param(rq, hs_pyro_params);
    if (bad) {
        st = hs_fail(&in, HS_INGEST_BAD, "unknown parameter %s", bad);
        goto out;
    }
    if ((bad = hs_repeated_param(rq, NULL))) {
        st = hs_fail(&in, HS_INGEST_BAD, "parameter %s given twice", bad);
        goto out;
    }
    if ((st = hs_pyro_name(&in, hs_param_get(rq, "name"), &pt)) || (st = hs_parse_times(hs_param_get(rq, "from"), hs_param_get(rq, "until"), &times, &res)) ||
        (st = hs_ingest_times(&in, &times)))
        goto out;
    long rate = 100;
    const char *sr = hs_param_get(rq, "sampleRate");
    if (sr) {
        char *e;
        errno = 0;
        rate = strtol(sr, &e, 10);
        if (errno || e == sr || *e || rate < 1 || rate > 1000000000L) {
            st = hs_fail(&in, HS_INGEST_BAD, "sampleRate=%s: expected an integer in Hz, 1 to 1e9", sr);
            goto out;
        }
    }
    const char *units = hs_param_get(rq, "units");
    if (units && *units) {
        static const char *const ok[] = {"samples", "objects", "goroutines", "bytes", "lock_samples",
                                         "lock_nanoseconds", NULL};
        bool found = false;
        for (const char *const *u = ok; *u && !found; u++)
            found = strcmp(*u, units) == 0;
        if (!found) {
            st = hs_fail(&in, HS_INGEST_BAD, "units=%s: not one of Pyroscope's units", units);
            goto out;
        }
    } else {
        units = NULL;
    }
    const char *agg = hs_param_get(rq, "aggregationType");
    if (agg && *agg && strcmp(agg, "sum") != 0 && strcmp(agg, "average") != 0) {
        st = hs_fail(&in, HS_INGEST_BAD, "aggregationType=%s: sum or average", agg);
        goto out;
    }
    const char *spy = hs_param_get(rq, "spyName");
    if (spy && *spy) {
        for (const char *c = spy; *c; c++)
            if (!hs_name_char((unsigned char)*c, true)) {
                st = hs_fail(&in, HS_INGEST_BAD, "spyName=%s: letters, digits, '_', '.', '-'", spy);
                goto out;
            }
        if ((st = hs_add_label(&in, "pyroscope_spy", spy)))
            goto out;
    }
    /* the body's format */
    const char *format = hs_param_get(rq, "format");
    const char *ct = rq->content_type ? rq->content_type : "";
    bool multipart = strncasecmp(ct, "multipart/form-data", 19) == 0;
    enum { F_PPROF, F_FOLDED, F_LINES } fmt;
    if (multipart || (format && strcmp(format, "pprof") == 0)) {
        fmt = F_PPROF;
    } else if (!format || !*format || !strcmp(format, "folded") || !strcmp(format, "groups") ||
               !strcmp(format, "collapsed")) {
        fmt = F_FOLDED;
    } else if (strcmp(format, "lines") == 0) {
        fmt = F_LINES;
    } else if (!strcmp(format, "trie") || !strcmp(format, "tree") || !strcmp(format, "jfr") ||
               !strcmp(format, "speedscope")) {
        st = hs_fail(&in, HS_INGEST_ENCODING, "format=%s is not supported (pprof, folded or lines)", format);
        goto out;
    } else {
        st = hs_fail(&in, HS_INGEST_BAD, "unknown format=%s (pprof, folded or lines)", format);
        goto out;
    }
    if (fmt == F_FOLDED && strstr(ct, "octet-stream+")) {
        st = hs_fail(&in, HS_INGEST_ENCODING, "Content-Type %s is not supported (pprof, folded or lines)", ct);
        goto out;
    }
    const void *data;
    size_t len;
    if ((st = hs_ingest_body(&in, &data, &len)))
        goto out;
    if (multipart) {
        if ((st = hs_unwrap_gzip(&in, &data, &len)))
            goto out;
        hs_part parts[HS_MAX_PARTS];
        size_t np = 0;
        if ((st = hs_multipart(&in, ct, data, len, parts, &np)))
            goto out;
        const hs_part *prof = NULL;
        for (size_t i = 0; i < np; i++) {
            if (strcmp(parts[i].name, "profile") == 0) {
                if (prof) {
                    st = hs_ing_err(&in, HS_INGEST_BAD, "multipart: two profile parts");
                    goto out;
                }
                prof = &parts[i];
            } else if (strcmp(parts[i].name, "prev_profile") == 0) {
                st = hs_ing_err(&in, HS_INGEST_BAD, "multipart: prev_profile (cumulative profiles of old "
                                               "Pyroscope clients) is not supported: send deltas");
                goto out;
            } else if (strcmp(parts[i].name, "sample_type_config") == 0) {
                const unsigned char *c = parts[i].data, *e = c + parts[i].len;
                while (c < e && isspace(*c))
                    c++;
                while (e > c && isspace(e[-1]))
                    e--;
                if (parts[i].len > HS_MAX_STC || c == e || *c != '{' || e[-1] != '}') {
                    st = hs_ing_err(&in, HS_INGEST_BAD, "multipart: sample_type_config is not a JSON object");
                    goto out;
                }
            } else {
                st = hs_fail(&in, HS_INGEST_BAD, "multipart: unknown part %s", parts[i].name);
                goto out;
            }
        }
        if (!prof) {
            st = hs_ing_err(&in, HS_INGEST_BAD, "multipart: no profile part");
            goto out;
        }
        data = prof->data;
        len = prof->len;
    }
    if ((st = hs_unwrap_gzip(&in, &data, &len)))
        goto out;
    if (fmt == F_PPROF) {
        if (!(p = hs_decode_pprof(&in, data, len))) {
            st = res.code;
            goto out;
        }
    } else if (!(p = hs_pyro_folded(&in, data, len, fmt == F_LINES))) {
        st = res.code;
        goto out;
    }
    if ((st = hs_decompose(&in, p, &d[0])))
        goto out;
    nd = 1;
    qsort(in.labels, in.n_labels, sizeof *in.labels, hs_label_cmp);
    if (fmt != F_PPROF) {
        if ((st = hs_pyro_folded_types(&in, &d[0], pt, units, rate)))
            goto out;
        hs_fill_meta(&in, &d[0], d[0].prof.type, rq->body, rq->body_len, NULL, false);
    } else {
        const hs_store_types *t = &d[0].prof.types;
        int cpu = -1;
        for (size_t i = 0; i < t->n; i++)
            if (!strcmp(t->type[i], "cpu") && !strcmp(t->unit[i], "nanoseconds"))
                cpu = (int)i;
        if (hs_has_type(t, "wall", "nanoseconds") && cpu >= 0 && t->n > 1) {
            /* Node.js wall profile with CPU time: a wall and a cpu profile */
            int wall_cols[HS_STORE_MAX_VALUES], cpu_cols[1] = {cpu};
            size_t nw = 0;
            for (size_t i = 0; i < t->n; i++)
                if ((int)i != cpu)
                    wall_cols[nw++] = (int)i;
            hs_decomposed whole = d[0];
            if (hs_project(&whole.prof, wall_cols, nw, &d[0]) != 0 ||
                hs_project(&whole.prof, cpu_cols, 1, &d[1]) != 0) {
                hs_decomposed_free(&d[0]);
                d[0] = whole;
                st = hs_ing_err(&in, HS_INGEST_FAILED, "out of memory");
                goto out;
            }
            d[0].parts = whole.parts; /* the projections point into it */
            nd = 2;
            hs_fill_meta(&in, &d[0], "wall", rq->body, rq->body_len, p, true);
            hs_fill_meta(&in, &d[1], "cpu", rq->body, rq->body_len, p, true);
        } else {
            const char *type = hs_infer_type(t);
            if (!strcmp(type, "lock") && pt && !strncmp(pt->suffix, "block_", 6))
                type = "block"; /* Go's block and mutex profiles have the same sample types */
            if (!hs_type_ok(type)) {
                st = hs_fail(&in, HS_INGEST_BAD, "sample type %s is not a usable type name", type);
                goto out;
            }
            hs_fill_meta(&in, &d[0], type, rq->body, rq->body_len, p, true);
        }
    }
    submitted = true;
    st = hs_submit(&in, b, d, nd);
out:
    if (!submitted)
        hs_batcher_expect(b, -1);
    for (size_t i = 0; i < 2; i++)
        hs_decomposed_free(&d[i]);
    hs_profile_free(p);
    hs_ingest_free(&in);
    (void)st;
    return hs_ingest_respond(rs, &res);
}
