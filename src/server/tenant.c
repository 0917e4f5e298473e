/* tenant.c — tenants of `hotspur serve` (issue 33; docs/server.md, "Tenants").
 *
 * A tenant is everything one organisation's requests touch: its own store,
 * group-commit batcher, naming of frames (uploaded debug info) and query
 * cache. Isolation is by construction: a request resolves its tenant once,
 * in http.c's gate, and every handler after that sees only that tenant's
 * objects, so no query can reach another tenant's rows whatever it asks.
 *
 * Where a tenant's data lives (the default tenant is the server's store as
 * configured, unchanged):
 *   sqlite:DIR              DIR/tenants/NAME (a store directory of its own)
 *   clickhouse://.../DB?O   the database DB_t_ENC on the same servers, ENC
 *                           being NAME with every character but [A-Za-z0-9]
 *                           written _XX (hex): one name, one database
 *   uploaded debug info     DEBUGINFO_DIR/tenants/NAME
 * Tenants open at the server's start (those with data: SQLite's
 * directories, ClickHouse's DB_t_* databases) or on first use, and stay
 * open until the server stops; at most HS_TENANTS_MAX besides the default.
 *
 * The token map (--tokens FILE): "TOKEN TENANT" per line, '#' comments. */
#define _GNU_SOURCE
#include "server/server.h"

#include "base/clock.h"
#include "server/query_cache.h"
#include "base/fs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define HS_TENANT_CACHE_BYTES ((size_t)64 << 20) /* stack records kept per tenant */

struct hs_tenants {
    hs_tenants_config cfg;
    pthread_mutex_t mu;
    hs_tenant *def;
    hs_tenant **v; /* the others, in the order they opened */
    size_t n;
};

bool hs_tenant_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > HS_TENANT_NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
            return false;
    return true;
}

int hs_tenant_store_url(const char *base, const char *name, char *out, size_t len)
{
    int n;
    if (strncmp(base, "clickhouse://", 13) == 0) {
        /* the database is the path's last part, before any '?' */
        const char *q = strchr(base, '?');
        size_t end = q ? (size_t)(q - base) : strlen(base);
        char enc[3 * HS_TENANT_NAME_MAX + 1];
        size_t k = 0;
        for (const char *c = name; *c; c++) {
            if (isalnum((unsigned char)*c))
                enc[k++] = *c;
            else
                k += (size_t)snprintf(enc + k, sizeof enc - k, "_%02x", (unsigned char)*c);
        }
        enc[k] = 0;
        n = snprintf(out, len, "%.*s_t_%s%s", (int)end, base, enc, q ? q : "");
    } else {
        const char *dir = strncmp(base, "sqlite:", 7) == 0 ? base + 7 : base;
        n = snprintf(out, len, "sqlite:%s/tenants/%s", dir, name);
    }
    return n > 0 && (size_t)n < len ? 0 : -1;
}

static int mkdirs(const char *path)
{
    return hs_mkdirs(path, 0700, NULL, 0);
}

static void tenant_free(hs_tenant *t)
{
    if (!t)
        return;
    if (t->batcher)
        hs_batcher_free(t->batcher);
    hs_stack_cache_free(t->qctx.cache);
    hs_names_free(t->names);
    if (t->store)
        hs_store_close(t->store);
    free(t->names_dir);
    free(t);
}

/* Open tenant name (NULL: the default tenant, the configuration as given). */
static hs_tenant *tenant_open(const hs_tenants_config *cfg, const char *name, char *err, size_t errlen)
{
    hs_tenant *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(t->name, sizeof t->name, "%s", name ? name : HS_TENANT_DEFAULT);
    char url[4096];
    const char *store_url = cfg->store_url;
    hs_names_config nc = cfg->names;
    if (name) {
        if (hs_tenant_store_url(cfg->store_url, name, url, sizeof url) < 0) {
            snprintf(err, errlen, "tenant %s: store URL too long", name);
            goto fail;
        }
        store_url = url;
        if (cfg->names.dir) {
            if (asprintf(&t->names_dir, "%s/tenants/%s", cfg->names.dir, name) < 0) {
                t->names_dir = NULL;
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
            if (mkdirs(t->names_dir) < 0) {
                snprintf(err, errlen, "tenant %s: cannot create %s: %s", name, t->names_dir, strerror(errno));
                goto fail;
            }
            nc.dir = t->names_dir;
        }
    }
    t->store = hs_store_open(store_url, err, errlen);
    if (!t->store)
        goto fail;
    hs_store_batching batching;
    hs_store_batching_get(t->store, &cfg->batch, &batching);
    t->batcher = hs_batcher_new(t->store, &batching);
    if (!t->batcher) {
        snprintf(err, errlen, "cannot start the ingest batcher");
        goto fail;
    }
    t->names = hs_names_new(&nc, err, errlen);
    if (!t->names)
        goto fail;
    hs_batcher_set_names(t->batcher, t->names);
    t->qctx = cfg->query; /* source paths, dropped labels, options */
    t->qctx.store = t->store;
    t->qctx.names = t->names;
    t->qctx.cache = hs_stack_cache_new(HS_TENANT_CACHE_BYTES);
    if (!t->qctx.cache) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    hs_stack_cache_set_names(t->qctx.cache, t->names);
    /* the server's retention loop reaches it from its next round; a tenant
     * whose store held old profiles loses them now, as the default does at
     * the server's start */
    char rerr[256];
    if (name && cfg->retention_ns > 0 &&
        hs_store_retain(t->store, hs_realtime_ns() - cfg->retention_ns, rerr, sizeof rerr) != 0)
        fprintf(stderr, "hotspur serve: retention (tenant %s): %s\n", name, rerr);
    return t;
fail:
    tenant_free(t);
    return NULL;
}

hs_tenants *hs_tenants_new(const hs_tenants_config *cfg, char *err, size_t errlen)
{
    hs_tenants *ts = calloc(1, sizeof *ts);
    if (!ts) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ts->cfg = *cfg;
    pthread_mutex_init(&ts->mu, NULL);
    ts->def = tenant_open(cfg, NULL, err, errlen);
    if (!ts->def) {
        hs_tenants_free(ts);
        return NULL;
    }
    return ts;
}

hs_tenant *hs_tenants_default(hs_tenants *ts)
{
    return ts->def;
}

int hs_tenants_get(hs_tenants *ts, const char *name, hs_tenant **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!name || strcmp(name, HS_TENANT_DEFAULT) == 0) {
        *out = ts->def;
        return 0;
    }
    if (!hs_tenant_name_ok(name)) {
        snprintf(err, errlen, "bad tenant '%.80s' (1..%d of [A-Za-z0-9_.-])", name, HS_TENANT_NAME_MAX);
        return -1;
    }
    pthread_mutex_lock(&ts->mu);
    for (size_t i = 0; i < ts->n; i++)
        if (strcmp(ts->v[i]->name, name) == 0) {
            *out = ts->v[i];
            pthread_mutex_unlock(&ts->mu);
            return 0;
        }
    int rc = 0;
    if (ts->n == HS_TENANTS_MAX) {
        snprintf(err, errlen, "too many tenants (%d besides the default)", HS_TENANTS_MAX);
        rc = HS_TENANTS_FULL;
    } else {
        /* (opened under the lock: a first request for a tenant is rare, and
         * two at once must not open its store twice) */
        hs_tenant *t = tenant_open(&ts->cfg, name, err, errlen);
        hs_tenant **nv = t ? realloc(ts->v, (ts->n + 1) * sizeof *nv) : NULL;
        if (!nv) {
            if (t)
                snprintf(err, errlen, "out of memory");
            tenant_free(t);
            rc = HS_STORE_UNAVAILABLE;
        } else {
            ts->v = nv;
            ts->v[ts->n++] = t;
            *out = t;
        }
    }
    pthread_mutex_unlock(&ts->mu);
    return rc;
}

void hs_tenants_each(hs_tenants *ts, void (*fn)(hs_tenant *t, void *arg), void *arg)
{
    fn(ts->def, arg);
    pthread_mutex_lock(&ts->mu);
    size_t n = ts->n;
    pthread_mutex_unlock(&ts->mu);
    for (size_t i = 0; i < n; i++) { /* (entries are never removed before free) */
        pthread_mutex_lock(&ts->mu);
        hs_tenant *t = ts->v[i];
        pthread_mutex_unlock(&ts->mu);
        fn(t, arg);
    }
}

/* A ClickHouse database's tenant part (ENC: _XX hex for what is not
 * [A-Za-z0-9]) back to the tenant's name in out; false if it is not one
 * hs_tenant_store_url writes. */
static bool tenant_decode(const char *enc, char *out, size_t len)
{
    size_t k = 0;
    for (const char *c = enc; *c; c++) {
        if (k + 1 >= len)
            return false;
        if (*c == '_') {
            unsigned v;
            if (!isxdigit((unsigned char)c[1]) || !isxdigit((unsigned char)c[2]) || sscanf(c + 1, "%2x", &v) != 1)
                return false;
            out[k++] = (char)v;
            c += 2;
        } else {
            out[k++] = *c;
        }
    }
    out[k] = 0;
    return hs_tenant_name_ok(out);
}

int hs_tenants_open_stored(hs_tenants *ts, char *err, size_t errlen)
{
    const char *base = ts->cfg.store_url;
    int rc = 0;
    if (strncmp(base, "clickhouse://", 13) == 0) {
        /* the databases DB_t_ENC beside the default tenant's */
        char **v = NULL, name[HS_TENANT_NAME_MAX + 1];
        size_t n = 0;
        if (hs_store_siblings(ts->def->store, "_t_", &v, &n, err, errlen) != 0)
            return -1;
        for (size_t i = 0; i < n && rc == 0; i++) {
            hs_tenant *t;
            if (tenant_decode(v[i], name, sizeof name))
                rc = hs_tenants_get(ts, name, &t, err, errlen) == 0 ? 0 : -1;
        }
        hs_store_strings_free(v, n);
        return rc;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tenants", strncmp(base, "sqlite:", 7) == 0 ? base + 7 : base);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        hs_tenant *t;
        if (e->d_name[0] != '.' && hs_tenant_name_ok(e->d_name))
            rc = hs_tenants_get(ts, e->d_name, &t, err, errlen) == 0 ? 0 : -1;
    }
    closedir(d);
    return rc;
}

void hs_tenants_free(hs_tenants *ts)
{
    if (!ts)
        return;
    for (size_t i = 0; i < ts->n; i++)
        tenant_free(ts->v[i]);
    free(ts->v);
    tenant_free(ts->def);
    pthread_mutex_destroy(&ts->mu);
    free(ts);
}

/* ---- the token map ---- */

struct hs_tokens {
    char **token, **tenant;
    size_t n;
};

hs_tokens *hs_tokens_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "--tokens %s: %s", path, strerror(errno));
        return NULL;
    }
    hs_tokens *m = calloc(1, sizeof *m);
    char *line = NULL;
    size_t cap = 0, lineno = 0, mcap = 0;
    bool bad = !m;
    if (!m)
        snprintf(err, errlen, "out of memory");
    while (!bad && getline(&line, &cap, f) >= 0) {
        lineno++;
        char *sv = NULL, *tok = strtok_r(line, " \t\r\n", &sv);
        if (!tok || tok[0] == '#')
            continue;
        char *ten = strtok_r(NULL, " \t\r\n", &sv), *more = strtok_r(NULL, " \t\r\n", &sv);
        if (!ten || (more && more[0] != '#') || !hs_tenant_name_ok(ten)) {
            snprintf(err, errlen, "--tokens %s:%zu: want 'TOKEN TENANT' (TENANT: 1..%d of [A-Za-z0-9_.-])", path,
                     lineno, HS_TENANT_NAME_MAX);
            bad = true;
            break;
        }
        for (size_t i = 0; i < m->n; i++)
            if (strcmp(m->token[i], tok) == 0) {
                snprintf(err, errlen, "--tokens %s:%zu: this token is listed twice", path, lineno);
                bad = true;
            }
        if (bad)
            break;
        if (m->n == mcap) {
            size_t nc = mcap ? 2 * mcap : 8;
            char **nt = realloc(m->token, nc * sizeof *nt);
            if (nt)
                m->token = nt;
            char **nn = nt ? realloc(m->tenant, nc * sizeof *nn) : NULL;
            if (nn)
                m->tenant = nn;
            if (!nt || !nn) {
                snprintf(err, errlen, "out of memory");
                bad = true;
                break;
            }
            mcap = nc;
        }
        m->token[m->n] = strdup(tok);
        m->tenant[m->n] = strdup(ten);
        if (!m->token[m->n] || !m->tenant[m->n]) {
            free(m->token[m->n]);
            free(m->tenant[m->n]);
            snprintf(err, errlen, "out of memory");
            bad = true;
        }
        if (!bad)
            m->n++;
    }
    free(line);
    fclose(f);
    if (!bad && m->n == 0) {
        snprintf(err, errlen, "--tokens %s: no 'TOKEN TENANT' line", path);
        bad = true;
    }
    if (bad) {
        hs_tokens_free(m);
        return NULL;
    }
    return m;
}

/* Constant time in the tokens' lengths: every entry is compared in full. */
static bool same_secret(const char *want, const char *got)
{
    size_t wl = strlen(want), gl = strlen(got);
    unsigned char d = wl != gl;
    for (size_t i = 0; i < wl; i++)
        d |= (unsigned char)(want[i] ^ (i < gl ? got[i] : 0));
    return d == 0;
}

const char *hs_tokens_tenant(const hs_tokens *m, const char *token)
{
    const char *hit = NULL;
    for (size_t i = 0; i < m->n; i++)
        if (same_secret(m->token[i], token) && !hit)
            hit = m->tenant[i];
    return hit;
}

size_t hs_tokens_count(const hs_tokens *m)
{
    return m->n;
}

const char *hs_tokens_tenant_at(const hs_tokens *m, size_t i)
{
    return m->tenant[i];
}

void hs_tokens_free(hs_tokens *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->token[i]);
        free(m->tenant[i]);
    }
    free(m->token);
    free(m->tenant);
    free(m);
}
