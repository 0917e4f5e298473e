/* diff_signif.c — see diff_signif.h. */
#include "cli/diff_signif.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"
#include "cli/analysis_cli.h"
#include "cli/fetch.h"
#include "harness/stats.h"

#define PROFILE_PATH "/api/v1/profile"

/* A profile query split: what comes before "profile" (…/api/v1/) and its
 * parameters (raw key=value pieces, as written). */
typedef struct {
    char *prefix;
    char **params;
    size_t n;
} qurl;

static void qurl_free(qurl *u)
{
    free(u->prefix);
    for (size_t i = 0; i < u->n; i++)
        free(u->params[i]);
    free(u->params);
}

static bool path_ok(const char *url, size_t path_len)
{
    size_t pl = strlen(PROFILE_PATH);
    return hs_fetch_is_url(url) && path_len >= pl && strncmp(url + path_len - pl, PROFILE_PATH, pl) == 0;
}

bool hs_signif_url_ok(const char *url)
{
    return path_ok(url, strcspn(url, "?#"));
}

static int qurl_parse(const char *url, qurl *u)
{
    memset(u, 0, sizeof *u);
    size_t path_len = strcspn(url, "?#");
    if (!path_ok(url, path_len))
        return -1;
    size_t pre = path_len - strlen("profile");
    if (!(u->prefix = strndup(url, pre)))
        return -1;
    const char *q = url[path_len] == '?' ? url + path_len + 1 : url + path_len;
    size_t qlen = strcspn(q, "#");
    u->params = calloc(qlen / 2 + 2, sizeof *u->params);
    if (!u->params)
        return -1;
    for (size_t i = 0; i < qlen;) {
        size_t n = strcspn(q + i, "&#");
        if (n && !(u->params[u->n++] = strndup(q + i, n)))
            return -1;
        i += n + 1;
    }
    return 0;
}

static bool key_in(const char *param, const char *const *keys)
{
    size_t kl = strcspn(param, "=");
    for (; *keys; keys++)
        if (strlen(*keys) == kl && strncmp(param, *keys, kl) == 0)
            return true;
    return false;
}

/* prefix + endpoint + "?" + the params whose key is (keep) or is not
 * (!keep) in keys + "&" + extra. NULL on out of memory. */
static char *qurl_build(const qurl *u, const char *endpoint, const char *const *keys, bool keep,
                        const char *extra)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    fprintf(f, "%s%s?", u->prefix, endpoint);
    for (size_t i = 0; i < u->n; i++)
        if (key_in(u->params[i], keys) == keep)
            fprintf(f, "%s&", u->params[i]);
    fputs(extra, f);
    if (fclose(f) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* "id=" + id percent-encoded. */
static char *id_param(const char *id)
{
    static const char hex[] = "0123456789ABCDEF";
    char *s = malloc(strlen(id) * 3 + 4), *p = s;
    if (!s)
        return NULL;
    p += sprintf(p, "id=");
    for (const unsigned char *c = (const unsigned char *)id; *c; c++)
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            strchr("-._~", *c))
            *p++ = (char)*c;
        else {
            *p++ = '%';
            *p++ = hex[*c >> 4];
            *p++ = hex[*c & 15];
        }
    *p = 0;
    return s;
}

/* The selection a side's windows are listed with (/api/v1/profiles takes
 * only these), and what a window's own URL leaves out (the id replaces the
 * selection; one window has nothing to average). */
static const char *const list_keys[] = {"service", "type", "from", "until", "version", "label", "weight",
                                        "sample_index", NULL};
static const char *const window_drop[] = {"from", "until", "version", "label", "weight", "agg", "id", NULL};

/* The ids of url's windows: *ids (n); 0, 1 when there are too many (the
 * count is then MAX + 1), 2 with a message printed. */
static int list_windows(const char *cmd, const char *url, const qurl *u, char ***ids, size_t *n)
{
    char limit[32], msg[512];
    snprintf(limit, sizeof limit, "limit=%d", HS_SIGNIF_MAX_WINDOWS + 1);
    char *lu = qurl_build(u, "profiles", list_keys, true, limit);
    if (!lu)
        return hs_cli_fail(cmd, NULL, "out of memory");
    char *body = NULL;
    size_t len = 0;
    *ids = NULL;
    *n = 0;
    if (hs_fetch_url(lu, &body, &len, msg, sizeof msg) < 0) {
        hs_cli_fail(cmd, lu, msg);
        free(lu);
        return 2;
    }
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    free(body);
    json_t *list = json_object_get(root, "profiles");
    int rc = 0;
    if (!json_is_array(list)) {
        snprintf(msg, sizeof msg, "listing the windows of %s: not a /api/v1/profiles answer (%s)", url,
                 root ? "no \"profiles\"" : je.text);
        rc = hs_cli_fail(cmd, lu, msg);
        goto out;
    }
    size_t m = json_array_size(list);
    *ids = calloc(m + 1, sizeof **ids);
    if (!*ids) {
        rc = hs_cli_fail(cmd, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m; i++) {
        const char *id = json_string_value(json_object_get(json_array_get(list, i), "id"));
        if (!id || !((*ids)[i] = strdup(id))) {
            rc = hs_cli_fail(cmd, lu, id ? "out of memory" : "a window without an id");
            goto out;
        }
        *n = i + 1;
    }
    if (json_is_true(json_object_get(root, "truncated")) || *n > HS_SIGNIF_MAX_WINDOWS)
        rc = 1;
out:
    json_decref(root);
    free(lu);
    return rc;
}

static void free_ids(char **ids, size_t n)
{
    for (size_t i = 0; ids && i < n; i++)
        free(ids[i]);
    free(ids);
}

/* sh[k * nw + w]: the share of name k (names: the diff's node names, ids
 * 0 .. k_names-1) in window w of the side at url. 0, or 2 (printed). */
static int side_shares(const char *cmd, const char *url, const qurl *u, char **ids, size_t nw,
                       const hs_analysis_options *o, hs_strtab *names, size_t k_names, double *sh)
{
    hs_analysis_options no;
    hs_analysis_options_init(&no);
    hs_analysis_apply_defaults(&no, HS_KIND_NOTRIM);
    char msg[512];
    for (size_t w = 0; w < nw; w++) {
        char *idp = id_param(ids[w]);
        char *wu = idp ? qurl_build(u, "profile", window_drop, false, idp) : NULL;
        free(idp);
        if (!wu)
            return hs_cli_fail(cmd, NULL, "out of memory");
        hs_profile **ps = NULL;
        int rc = hs_acli_load(cmd, NULL, &wu, 1, true, &ps);
        free(wu);
        if (rc)
            return rc;
        hs_view *v = hs_view_build(ps, 1, NULL, 0, o, msg, sizeof msg);
        hs_graph g;
        if (!v || (v->total && hs_graph_build(v, &no, &g, msg, sizeof msg) < 0)) {
            hs_view_free(v);
            hs_acli_free_profiles(ps, 1);
            snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (a window of %s)", url);
            return hs_cli_fail(cmd, NULL, msg);
        }
        if (v->total) {
            for (size_t i = 0; i < v->n_nodes; i++) {
                uint32_t k = hs_strtab_intern(names, v->nodes[i].name);
                if (k < k_names)
                    sh[(size_t)k * nw + w] += (double)g.nodes[i].cum / (double)v->total;
            }
            hs_graph_free(&g);
        }
        hs_view_free(v);
        hs_acli_free_profiles(ps, 1);
    }
    return 0;
}

int hs_diff_significance(const char *cmd, const char *base_url, const char *new_url,
                         const hs_analysis_options *o, const hs_view *v, hs_diff_signif *out)
{
    memset(out, 0, sizeof *out);
    const char *urls[2] = {base_url, new_url}, *side[2] = {"BASE", "NEW"};
    qurl u[2] = {{0}};
    char **ids[2] = {NULL, NULL};
    size_t nw[2] = {0, 0};
    double *sh[2] = {NULL, NULL};
    hs_strtab names;
    uint32_t *name_of = NULL;
    int rc = 0;
    if (hs_strtab_init(&names) < 0)
        return hs_cli_fail(cmd, NULL, "out of memory");
    for (int s = 0; s < 2; s++) {
        if (qurl_parse(urls[s], &u[s]) < 0) {
            rc = hs_cli_fail(cmd, urls[s], "--significance: not a `hotspur serve` query URL (.../api/v1/profile?...)");
            goto out;
        }
        rc = list_windows(cmd, urls[s], &u[s], &ids[s], &nw[s]);
        if (rc == 1) {
            snprintf(out->why, sizeof out->why, "%s has more than %d windows: narrow its range", side[s],
                     HS_SIGNIF_MAX_WINDOWS);
            rc = 0;
            goto out;
        }
        if (rc)
            goto out;
        if (nw[s] < HS_SIGNIF_MIN_WINDOWS) {
            snprintf(out->why, sizeof out->why, "%s has %zu window%s, the test needs %d to %d a side", side[s],
                     nw[s], nw[s] == 1 ? "" : "s", HS_SIGNIF_MIN_WINDOWS, HS_SIGNIF_MAX_WINDOWS);
            goto out;
        }
    }
    /* the diff's names first: ids 0 .. k_names-1 */
    name_of = malloc((v->n_nodes + 1) * sizeof *name_of);
    if (!name_of) {
        rc = hs_cli_fail(cmd, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < v->n_nodes; i++)
        if ((name_of[i] = hs_strtab_intern(&names, v->nodes[i].name)) == UINT32_MAX) {
            rc = hs_cli_fail(cmd, NULL, "out of memory");
            goto out;
        }
    size_t k_names = hs_strtab_count(&names);
    for (int s = 0; s < 2; s++) {
        if (!(sh[s] = calloc(k_names * nw[s] + 1, sizeof *sh[s]))) {
            rc = hs_cli_fail(cmd, NULL, "out of memory");
            goto out;
        }
        if ((rc = side_shares(cmd, urls[s], &u[s], ids[s], nw[s], o, &names, k_names, sh[s])))
            goto out;
    }
    if (!(out->p = malloc((v->n_nodes + 1) * sizeof *out->p))) {
        rc = hs_cli_fail(cmd, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < v->n_nodes; i++)
        out->p[i] = hs_bstat_mann_whitney(sh[0] + (size_t)name_of[i] * nw[0], nw[0],
                                          sh[1] + (size_t)name_of[i] * nw[1], nw[1]);
    out->base_windows = nw[0];
    out->new_windows = nw[1];
out:
    for (int s = 0; s < 2; s++) {
        qurl_free(&u[s]);
        free_ids(ids[s], nw[s]);
        free(sh[s]);
    }
    free(name_of);
    hs_strtab_free(&names);
    return rc;
}

void hs_diff_signif_free(hs_diff_signif *s)
{
    free(s->p);
    s->p = NULL;
}
