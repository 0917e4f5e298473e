/* analysis_cli.c — see analysis_cli.h. */
#include "cli/analysis_cli.h"
#include "cli/cmd_export.h"

#include "cli/fetch.h"

#include <stdlib.h>
#include <string.h>

void hs_acli_free_profiles(hs_profile **ps, int n)
{
    if (!ps)
        return;
    for (int i = 0; i < n; i++)
        hs_profile_free(ps[i]);
    free(ps);
}

/* hs_cli_load, then the profile's drop_frames/keep_frames (pprof's
 * RemoveUninteresting) unless prune is false. */
static hs_profile *load_one(const char *path, const char *from, bool prune, char *msg,
                            size_t len)
{
    hs_profile *p = hs_cli_load(path, from, msg, len); /* pprof, collapsed, perf script */
    if (p && prune && hs_analysis_remove_uninteresting(p, msg, len) < 0) {
        hs_profile_free(p);
        p = NULL;
    }
    return p;
}

int hs_acli_load(const char *cmd, const char *from, char **files, int n, bool prune,
                 hs_profile ***out)
{
    hs_profile **ps = calloc((size_t)n + 1, sizeof *ps);
    if (!ps)
        return hs_cli_fail(cmd, NULL, "out of memory");
    char msg[512];
    for (int i = 0; i < n; i++) {
        ps[i] = load_one(files[i], from, prune, msg, sizeof msg);
        if (!ps[i]) {
            hs_acli_free_profiles(ps, i);
            return hs_cli_fail(cmd, files[i], msg);
        }
    }
    if (hs_collapsed_align(ps, (size_t)n, msg, sizeof msg) < 0) {
        hs_acli_free_profiles(ps, n);
        return hs_cli_fail(cmd, NULL, msg);
    }
    *out = ps;
    return 0;
}

int hs_acli_load_view(const char *cmd, char **files, int n, const hs_analysis_options *o,
                      hs_profile **prof, hs_view **v)
{
    char msg[512];
    int rc = hs_acli_load_merged(cmd, files, n, o, prof);
    if (rc)
        return rc;
    if (!(*v = hs_view_build(prof, 1, NULL, 0, o, msg, sizeof msg)))
        return hs_cli_fail(cmd, NULL, msg);
    hs_acli_warnings(cmd, *v);
    return 0;
}

FILE *hs_acli_open_output(const char *cmd, const char *output)
{
    FILE *out = output ? fopen(output, "w") : stdout;
    if (!out)
        hs_cli_fail(cmd, output, "cannot open for writing");
    return out;
}

int hs_acli_close_output(const char *cmd, FILE *out, const char *output, int rc)
{
    if (out && out != stdout && fclose(out) != 0 && rc == 0) {
        hs_cli_fail(cmd, output, "error writing output");
        rc = 1;
    }
    return rc;
}

int hs_acli_report_fail(const char *cmd, FILE *out, const char *msg)
{
    int rc = hs_cli_fail(cmd, NULL, msg);
    return out && ferror(out) ? 1 : rc;
}

char *hs_acli_join_names(char **names, int n)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(names[i]) + 2;
    char *s = calloc(1, len);
    for (int i = 0; s && i < n; i++) {
        if (i)
            strcat(s, ", ");
        strcat(s, names[i]);
    }
    return s;
}

void hs_acli_warnings(const char *cmd, const hs_view *v)
{
    const char *w = v->warnings;
    while (w && *w) {
        const char *e = strchr(w, '\n');
        size_t len = e ? (size_t)(e - w) : strlen(w);
        fprintf(stderr, "hotspur %s: %.*s\n", cmd, (int)len, w);
        w += len + (e ? 1 : 0);
    }
}

int hs_acli_load_merged(const char *cmd, char **files, int n, const hs_analysis_options *o,
                        hs_profile **out)
{
    size_t nb = o ? o->n_base : 0;
    hs_profile **ps = NULL;
    int rc = hs_acli_load(cmd, NULL, files, n, true, &ps);
    if (rc)
        return rc;
    if (n == 1 && nb == 0) {
        *out = ps[0];
        free(ps);
        return 0;
    }
    hs_profile **all = realloc(ps, ((size_t)n + nb + 1) * sizeof *all);
    if (!all) {
        hs_acli_free_profiles(ps, n);
        return hs_cli_fail(cmd, NULL, "out of memory");
    }
    ps = all;
    int total = n;
    char msg[512];
    for (size_t i = 0; i < nb; i++) {
        ps[total] = load_one(o->base[i], NULL, true, msg, sizeof msg);
        if (!ps[total]) {
            hs_acli_free_profiles(ps, total);
            return hs_cli_fail(cmd, o->base[i], msg);
        }
        hs_analysis_negate(ps[total++]); /* pprof's -base: Scale(-1), then merge */
    }
    if (hs_collapsed_align(ps, (size_t)total, msg, sizeof msg) < 0) {
        hs_acli_free_profiles(ps, total);
        return hs_cli_fail(cmd, NULL, msg);
    }
    *out = o && o->diff_base ? hs_analysis_merge_marked(ps, (size_t)total, (size_t)n, msg, sizeof msg)
                             : hs_analysis_merge(ps, (size_t)total, msg, sizeof msg);
    hs_acli_free_profiles(ps, total);
    if (!*out)
        return hs_cli_fail(cmd, NULL, msg);
    return 0;
}
