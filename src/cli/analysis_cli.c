/* analysis_cli.c — see analysis_cli.h. */
#include "cli/analysis_cli.h"
#include "cli/cmd_export.h"

#include "cli/fetch.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

int hs_acli_fail(const char *cmd, const char *what, const char *msg)
{
    if (what)
        fprintf(stderr, "hotspur %s: %s: %s\n", cmd, what, msg);
    else
        fprintf(stderr, "hotspur %s: %s\n", cmd, msg);
    return 2;
}

int hs_acli_parse(const hs_acli_spec *s, int argc, char **argv, hs_analysis_options *o,
                  const char **output, int *first)
{
    static const struct option longopts[] = {
        HS_ANALYSIS_LONGOPTS,
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char msg[512];
    int c;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long_only(argc, argv, ":ho:n:", longopts, NULL)) != -1) {
        if (c == 'h') {
            s->usage(stdout);
            if (s->filters && strcmp(s->name, "merge") != 0) {
                fputc('\n', stdout);
                hs_analysis_options_help(stdout, s->kind);
            }
            hs_fetch_help(stdout);
            return 0;
        }
        if (c == 'o' && s->output) {
            *output = optarg;
            continue;
        }
        if (c == 'n' && s->filters && s->kind != HS_KIND_NOTRIM)
            c = HS_OPT_NODECOUNT;
        if (c == ':') {
            snprintf(msg, sizeof msg, "option '%s' needs an argument", argv[optind - 1]);
            return hs_acli_fail(s->name, NULL, msg);
        }
        bool allowed = c >= HS_OPT_SAMPLE_INDEX && c < HS_OPT__END && s->filters;
        if (c == HS_OPT_NORMALIZE)
            allowed = s->normalize;
        if (c == HS_OPT_SOURCE_PATH)
            allowed = s->source_path;
        if ((c == HS_OPT_NODECOUNT || c == HS_OPT_NODEFRACTION || c == HS_OPT_EDGEFRACTION ||
             c == HS_OPT_CUM) &&
            s->kind == HS_KIND_NOTRIM)
            allowed = false;
        if (!allowed) {
            snprintf(msg, sizeof msg, "unknown option '%s' (see hotspur %s --help)",
                     argv[optind - 1], s->name);
            return hs_acli_fail(s->name, NULL, msg);
        }
        if (hs_analysis_parse_option(o, c, optarg, msg, sizeof msg) < 0)
            return hs_acli_fail(s->name, NULL, msg);
    }
    int n = argc - optind;
    if (n < s->min_args || (s->max_args >= 0 && n > s->max_args)) {
        snprintf(msg, sizeof msg, "%s (see hotspur %s --help)",
                 n < s->min_args ? "missing arguments" : "too many arguments", s->name);
        return hs_acli_fail(s->name, NULL, msg);
    }
    if (s->output && output && !*output && s->min_args > 0 && strcmp(s->name, "merge") == 0) {
        return hs_acli_fail(s->name, NULL, "missing -o OUT (see hotspur merge --help)");
    }
    *first = optind;
    return -1;
}

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
static hs_profile *load_one(const char *path, bool prune, char *msg, size_t len)
{
    hs_profile *p = hs_cli_load(path, NULL, msg, len); /* pprof, collapsed, perf script */
    if (p && prune && hs_analysis_remove_uninteresting(p, msg, len) < 0) {
        hs_profile_free(p);
        p = NULL;
    }
    return p;
}

int hs_acli_load(const char *cmd, char **files, int n, bool prune, hs_profile ***out)
{
    hs_profile **ps = calloc((size_t)n + 1, sizeof *ps);
    if (!ps)
        return hs_acli_fail(cmd, NULL, "out of memory");
    char msg[512];
    for (int i = 0; i < n; i++) {
        ps[i] = load_one(files[i], prune, msg, sizeof msg);
        if (!ps[i]) {
            hs_acli_free_profiles(ps, i);
            return hs_acli_fail(cmd, files[i], msg);
        }
    }
    *out = ps;
    return 0;
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
    int rc = hs_acli_load(cmd, files, n, true, &ps);
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
        return hs_acli_fail(cmd, NULL, "out of memory");
    }
    ps = all;
    int total = n;
    char msg[512];
    for (size_t i = 0; i < nb; i++) {
        ps[total] = load_one(o->base[i], true, msg, sizeof msg);
        if (!ps[total]) {
            hs_acli_free_profiles(ps, total);
            return hs_acli_fail(cmd, o->base[i], msg);
        }
        hs_analysis_negate(ps[total++]); /* pprof's -base: Scale(-1), then merge */
    }
    *out = o && o->diff_base ? hs_analysis_merge_marked(ps, (size_t)total, (size_t)n, msg, sizeof msg)
                             : hs_analysis_merge(ps, (size_t)total, msg, sizeof msg);
    hs_acli_free_profiles(ps, total);
    if (!*out)
        return hs_acli_fail(cmd, NULL, msg);
    return 0;
}
