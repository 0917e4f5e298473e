/* ingest_util.h — what test_ingest.c and test_ingest_fuzz.c share: a temp
 * sqlite store with a batcher, hand-built requests, pprof bodies built with
 * the profile API, and zlib helpers. Header-only (static functions). */
#ifndef HS_TEST_INGEST_UTIL_H
#define HS_TEST_INGEST_UTIL_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "profile/profile.h"
#include "server/server.h"
#include "store/store.h"

typedef struct {
    char dir[64];
    hs_store *st;
    hs_batcher *b;
    hs_limits lim;
} ingest_env;

static int iu_rm(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(path);
}

static ingest_env *iu_env_new(void)
{
    ingest_env *e = calloc(1, sizeof *e);
    char err[256];
    if (!e)
        return NULL;
    snprintf(e->dir, sizeof e->dir, "/tmp/hs-ingest-XXXXXX");
    if (!mkdtemp(e->dir)) {
        free(e);
        return NULL;
    }
    e->st = hs_store_open(e->dir, err, sizeof err);
    if (!e->st) {
        fprintf(stderr, "store: %s\n", err);
        free(e);
        return NULL;
    }
    e->b = hs_batcher_new(e->st, &(hs_store_batching){.max_profiles = 64, .wait_ms = 2, .writers = 1});
    hs_limits_default(&e->lim);
    return e;
}

static void iu_env_free(ingest_env *e)
{
    if (!e)
        return;
    hs_batcher_free(e->b);
    hs_store_close(e->st);
    nftw(e->dir, iu_rm, 16, FTW_DEPTH | FTW_PHYS);
    free(e);
}

static int64_t iu_stored(ingest_env *e)
{
    hs_store_stats s;
    char err[256];
    if (hs_store_stats_get(e->st, &s, err, sizeof err) != 0)
        return -1;
    return s.profiles;
}

/* A request with up to 16 "key=value" parameters given as one string
 * separated by '&' (no URL decoding: tests write plain values). */
typedef struct {
    hs_http_request rq;
    hs_param params[32];
    char buf[8192];
} iu_req;

static void iu_req_init(iu_req *r, const char *path, const char *query, const void *body, size_t len)
{
    memset(r, 0, sizeof *r);
    r->rq.method = "POST";
    r->rq.path = path;
    r->rq.params = r->params;
    r->rq.body = body;
    r->rq.body_len = len;
    snprintf(r->buf, sizeof r->buf, "%s", query ? query : "");
    for (char *q = r->buf, *next; *q && r->rq.n_params < 32; q = next) {
        char *amp = strchr(q, '&');
        next = amp ? amp + 1 : q + strlen(q);
        if (amp)
            *amp = '\0';
        char *eq = strchr(q, '=');
        if (eq)
            *eq = '\0';
        r->params[r->rq.n_params++] = (hs_param){q, eq ? eq + 1 : ""};
    }
}

/* Run one handler; returns the status, body in *out (caller frees) if out. */
static int iu_call(ingest_env *e, int pyroscope, iu_req *r, char **out)
{
    hs_http_response rs = {0};
    if (out)
        *out = NULL;
    int st = pyroscope ? hs_ingest_pyroscope(e->b, &e->lim, &r->rq, &rs)
                       : hs_ingest_native(e->b, &e->lim, &r->rq, &rs);
    if (rs.status != st) { /* the handler must answer what it returns */
        free(rs.body);
        if (out)
            *out = strdup("status mismatch");
        return -1;
    }
    if (out)
        *out = rs.body ? rs.body : strdup("");
    else
        free(rs.body);
    return st;
}

/* ---- pprof bodies ---- */

typedef struct {
    const char *types[4][2];
    size_t n_types;
    int64_t time_nanos, duration_nanos;
    size_t n_samples;  /* distinct stacks: leaf_<i % 7>, depth 3 + i % 5 */
    size_t depth_base; /* extra frames on every stack */
    int with_labels;   /* sample label thread=worker<i%3> */
    const char *fn_prefix;
} iu_prof;

static hs_profile *iu_build(const iu_prof *o)
{
    hs_profile *p = hs_profile_new();
    if (!p)
        return NULL;
    for (size_t t = 0; t < o->n_types; t++)
        hs_profile_add_sample_type(p, o->types[t][0], o->types[t][1]);
    hs_profile_set_period(p, o->types[o->n_types - 1][0], o->types[o->n_types - 1][1], 10000000);
    p->time_nanos = o->time_nanos;
    p->duration_nanos = o->duration_nanos;
    const char *pre = o->fn_prefix ? o->fn_prefix : "";
    uint64_t locs[4096];
    for (size_t i = 0; i < o->n_samples; i++) {
        size_t depth = 3 + i % 5 + o->depth_base;
        if (depth > 4096)
            depth = 4096;
        for (size_t d = 0; d < depth; d++) {
            char name[64];
            if (d == 0)
                snprintf(name, sizeof name, "%sleaf_%zu", pre, i % 7);
            else if (d == depth - 1)
                snprintf(name, sizeof name, "%smain", pre);
            else
                snprintf(name, sizeof name, "%sfn_%zu_%zu", pre, d, i % 3);
            uint64_t fn = hs_profile_add_function(p, name, name, "src/app.c", (int64_t)d);
            hs_line line = {.function_id = fn, .line = 10 + (int64_t)d};
            locs[d] = hs_profile_add_location(p, 0, 0x1000 + d, &line, 1);
        }
        int64_t v[4];
        for (size_t t = 0; t < o->n_types; t++)
            v[t] = (int64_t)((i + 1) * (t ? 10000000 : 1));
        hs_label l[1];
        size_t nl = 0;
        if (o->with_labels) {
            char val[16];
            snprintf(val, sizeof val, "worker%zu", i % 3);
            l[0] = (hs_label){.key = hs_profile_str(p, "thread"), .str = hs_profile_str(p, val)};
            nl = 1;
        }
        hs_profile_add_sample(p, locs, depth, v, l, nl);
    }
    return p;
}

/* Every gzip member of gz inflated (zlib), malloc'd; NULL if corrupt. */
static __attribute__((unused)) unsigned char *iu_gunzip(const void *gz, size_t len, size_t *outlen)
{
    size_t cap = len * 20 + 1024;
    unsigned char *plain = malloc(cap);
    z_stream z = {0};
    if (!plain || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        free(plain);
        return NULL;
    }
    z.next_in = (unsigned char *)(uintptr_t)gz;
    z.avail_in = (uInt)len;
    z.next_out = plain;
    z.avail_out = (uInt)cap;
    int zr;
    size_t used = 0;
    for (;;) { /* hs_profile_encode writes a member per ~2 MiB of a large profile */
        zr = inflate(&z, Z_NO_FLUSH);
        used = cap - z.avail_out;
        if (zr == Z_STREAM_END && z.avail_in > 0 && inflateReset(&z) == Z_OK)
            continue;
        if (zr == Z_BUF_ERROR && z.avail_out == 0) { /* room, twice as much */
            unsigned char *np = realloc(plain, cap * 2);
            if (!np)
                break;
            plain = np;
            cap *= 2;
            z.next_out = plain + used;
            z.avail_out = (uInt)(cap - used);
            continue;
        }
        if (zr != Z_OK)
            break;
    }
    *outlen = used;
    inflateEnd(&z);
    if (zr != Z_STREAM_END || z.avail_in > 0) {
        free(plain);
        return NULL;
    }
    return plain;
}

/* Encode o as pprof: gzipped (gz) or plain. malloc'd. */
static void *iu_pprof(const iu_prof *o, int gz, size_t *len)
{
    char err[256];
    hs_profile *p = iu_build(o);
    void *out = NULL;
    if (!p || hs_profile_encode(p, &out, len, err, sizeof err) != 0) {
        hs_profile_free(p);
        return NULL;
    }
    hs_profile_free(p);
    if (gz)
        return out;
    unsigned char *plain = iu_gunzip(out, *len, len); /* our own gzip, inflated */
    free(out);
    return plain;
}

/* gzip data into a malloc'd buffer. */
static __attribute__((unused)) void *iu_gzip(const void *data, size_t len, size_t *outlen)
{
    z_stream z = {0};
    deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&z, len) + 64;
    unsigned char *out = malloc(cap);
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_FINISH);
    *outlen = z.total_out;
    deflateEnd(&z);
    return out;
}

/* A multipart/form-data body with a "profile" part (and optionally a
 * sample_type_config part); boundary "XyZb0und". malloc'd. */
static char *iu_multipart(const void *prof, size_t plen, const char *stc, size_t *len)
{
    const char *b = "XyZb0und";
    size_t cap = plen + (stc ? strlen(stc) : 0) + 1024;
    char *out = malloc(cap);
    size_t n = (size_t)snprintf(out, cap,
                                "--%s\r\nContent-Disposition: form-data; name=\"profile\"; "
                                "filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                                b);
    memcpy(out + n, prof, plen);
    n += plen;
    if (stc)
        n += (size_t)snprintf(out + n, cap - n,
                              "\r\n--%s\r\nContent-Disposition: form-data; name=\"sample_type_config\"; "
                              "filename=\"sample_type_config.json\"\r\n\r\n%s",
                              b, stc);
    n += (size_t)snprintf(out + n, cap - n, "\r\n--%s--\r\n", b);
    *len = n;
    return out;
}

#endif
