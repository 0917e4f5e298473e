/* store.c — hs_store_open picks the backend from the URL; the public
 * functions of store.h are thin wrappers over the backend's ops, plus the
 * frees of what the store hands out. */
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

hs_store *hs_store_open(const char *url, char *err, size_t errlen)
{
    if (!url || !*url) {
        hs_err(err, errlen, "no store URL given");
        return NULL;
    }
    if (strncmp(url, "clickhouse://", 13) == 0)
        return hs_store_clickhouse_open(url, err, errlen);
    if (strncmp(url, "sqlite:", 7) == 0)
        url += 7;
    else if (strstr(url, "://")) {
        hs_err(err, errlen, "unknown store URL scheme in '%s' (sqlite:DIR, DIR or clickhouse://HOST:PORT/DB)",
                  url);
        return NULL;
    }
    if (!*url) {
        hs_err(err, errlen, "sqlite: needs a directory");
        return NULL;
    }
    return hs_store_sqlite_open(url, err, errlen);
}

void hs_store_close(hs_store *s)
{
    if (s)
        s->ops->close(s);
}

void hs_store_batching_get(const hs_store *s, const hs_store_batching *over, hs_store_batching *out)
{
    const hs_store_batching *d = &s->ops->batching;
    *out = (hs_store_batching){
        .max_profiles = d->max_profiles ? d->max_profiles : 128,
        .wait_ms = d->max_profiles ? d->wait_ms : 10,
        .writers = d->writers > 0 ? d->writers : 1,
        .linger = d->linger > 0,
        .min_parallel = d->min_parallel ? d->min_parallel : 1,
    };
    if (!over)
        return;
    if (over->max_profiles)
        out->max_profiles = over->max_profiles;
    if (over->wait_ms)
        out->wait_ms = over->wait_ms > 0 ? over->wait_ms : 0; /* < 0: no wait at all */
    if (over->writers > 0)
        out->writers = over->writers;
    if (over->linger)
        out->linger = over->linger > 0;
    if (over->min_parallel)
        out->min_parallel = over->min_parallel;
}

void hs_store_types_format(const hs_store_types *t, char *out, size_t len)
{
    size_t w = 0;
    if (len)
        out[0] = '\0';
    for (size_t i = 0; i < t->n && w < len; i++) {
        int k = snprintf(out + w, len - w, "%s%s/%s", i ? ", " : "", t->type[i], t->unit[i]);
        if (k < 0)
            break;
        w += (size_t)k;
    }
}

int hs_store_put_marked(hs_store *s, const hs_store_profile *const *profiles, size_t n, unsigned char *dup,
                        size_t *duplicates, char *err, size_t errlen)
{
    unsigned char one, *d = dup ? dup : n <= 1 ? &one : calloc(n, 1);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(d, 0, n);
    int rc = s->ops->put(s, profiles, n, d, err, errlen);
    if (duplicates) {
        *duplicates = 0;
        for (size_t i = 0; rc == 0 && i < n; i++)
            *duplicates += d[i] != 0;
    }
    if (d != dup && d != &one)
        free(d);
    return rc;
}

int hs_store_put(hs_store *s, const hs_store_profile *const *profiles, size_t n, size_t *duplicates, char *err,
                 size_t errlen)
{
    return hs_store_put_marked(s, profiles, n, NULL, duplicates, err, errlen);
}

int hs_store_services(hs_store *s, const hs_store_query *q, char ***out, size_t *n, char *err, size_t errlen)
{
    return s->ops->strings(s, HS_STORE_SERVICES, q, NULL, out, n, err, errlen);
}

int hs_store_types_of(hs_store *s, const hs_store_query *q, char ***out, size_t *n, char *err, size_t errlen)
{
    return s->ops->strings(s, HS_STORE_TYPES, q, NULL, out, n, err, errlen);
}

int hs_store_versions(hs_store *s, const hs_store_query *q, char ***out, size_t *n, char *err, size_t errlen)
{
    return s->ops->strings(s, HS_STORE_VERSIONS, q, NULL, out, n, err, errlen);
}

int hs_store_label_names(hs_store *s, const hs_store_query *q, char ***out, size_t *n, char *err, size_t errlen)
{
    return s->ops->strings(s, HS_STORE_LABEL_NAMES, q, NULL, out, n, err, errlen);
}

int hs_store_label_values(hs_store *s, const hs_store_query *q, const char *name, char ***out, size_t *n,
                          char *err, size_t errlen)
{
    return s->ops->strings(s, HS_STORE_LABEL_VALUES, q, name, out, n, err, errlen);
}

int hs_store_siblings(hs_store *s, const char *suffix, char ***out, size_t *n, char *err, size_t errlen)
{
    return s->ops->strings(s, HS_STORE_SIBLINGS, NULL, suffix, out, n, err, errlen);
}

void hs_store_strings_free(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

int hs_store_type_info(hs_store *s, const hs_store_query *q, hs_store_types *out, char *err, size_t errlen)
{
    return s->ops->type_info(s, q, out, err, errlen);
}

int hs_store_merge(hs_store *s, const hs_store_query *q, hs_store_merged *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    return s->ops->merge(s, q, out, err, errlen);
}

/* Backends allocate rows and owned with malloc; the type strings live in
 * owned. */
void hs_store_merged_free(hs_store_merged *m)
{
    if (!m)
        return;
    free(m->rows);
    free(m->owned);
    memset(m, 0, sizeof *m);
}

int hs_store_get_stacks(hs_store *s, const uint64_t *hashes, size_t n,
                        void (*fn)(void *arg, uint64_t hash, const void *data, size_t len), void *arg, char *err,
                        size_t errlen)
{
    return s->ops->get_stacks(s, hashes, n, fn, arg, err, errlen);
}

int hs_store_series(hs_store *s, const hs_store_query *q, int64_t step_ns, hs_store_point **out, size_t *n,
                    char *err, size_t errlen)
{
    if (step_ns <= 0) {
        hs_err(err, errlen, "series step must be positive");
        return -1;
    }
    return s->ops->series(s, q, step_ns, out, n, err, errlen);
}

int hs_store_profiles(hs_store *s, const hs_store_query *q, size_t limit, hs_store_profile_row **out, size_t *n,
                      char *err, size_t errlen)
{
    return s->ops->profiles(s, q, limit, out, n, err, errlen);
}

void hs_store_profile_rows_free(hs_store_profile_row *rows, size_t n)
{
    if (!rows)
        return;
    for (size_t i = 0; i < n; i++)
        free(rows[i].version);
    free(rows);
}

int hs_store_retain(hs_store *s, int64_t before_ns, char *err, size_t errlen)
{
    return s->ops->retain(s, before_ns, err, errlen);
}

int hs_store_stats_get(hs_store *s, hs_store_stats *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    return s->ops->stats(s, out, err, errlen);
}
