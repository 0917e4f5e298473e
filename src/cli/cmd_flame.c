/* cmd_flame.c — `hotspur flame [-o out.html] [filters] FILE...`: write an
 * interactive, self-contained HTML flame graph (report/flame.c) of one
 * profile or of several merged. Takes the filters every report takes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/analysis_cli.h"
#include "cli/cmd_export.h"
#include "cli/commands.h"

static void hs_flame_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur flame [-o OUT.html] [--title TEXT] [options] FILE...\n"
            "\n"
            "Write an interactive flame graph as one self-contained HTML file (no\n"
            "network, no external scripts): click a frame to zoom, Esc or 'Reset zoom'\n"
            "to go back, search frames by regex (matches highlighted, their share of\n"
            "the total shown), hover for self/total values and percentages, toggle\n"
            "flame (root at the bottom) / icicle (root at the top).\n"
            "FILE is a pprof profile (gzipped or not), or collapsed stacks or `perf\n"
            "script` text (detected); several FILEs are merged. '-' reads stdin.\n"
            "\n"
            "  -o, --output FILE  HTML file to write (default: flame.html; '-' = stdout)\n"
            "      --title TEXT   title shown in the page (default: the file names)\n"
            "      --palette P    FlameGraph's colours: hot (default), mem or io\n"
            "      --reverse      merge stacks at their leaves (callers above each leaf),\n"
            "                     as flamegraph.pl --reverse\n"
            "  -h, --help         show this help\n");
}

typedef struct {
    const char *title, *palette;
    bool reverse;
} flame_args;

enum { OPT_TITLE = HS_CLI_EXTRA, OPT_PALETTE, OPT_REVERSE };

static int flame_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                       size_t errlen)
{
    flame_args *a = ctx;
    (void)o;
    switch (code) {
    case OPT_TITLE:
        a->title = arg;
        return 0;
    case OPT_PALETTE:
        if (strcmp(arg, "hot") && strcmp(arg, "mem") && strcmp(arg, "io")) {
            snprintf(err, errlen, "--palette must be hot, mem or io (FlameGraph's palettes)");
            return -1;
        }
        a->palette = arg;
        return 0;
    default: /* OPT_REVERSE */
        a->reverse = true;
        return 0;
    }
}

int hs_cmd_flame(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"title", required_argument, OPT_TITLE},
        {"palette", required_argument, OPT_PALETTE},
        {"reverse", no_argument, OPT_REVERSE},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {
        .name = "flame", .usage = hs_flame_usage, .kind = HS_KIND_NOTRIM,
        .takes = HS_CLI_FILTERS | HS_CLI_OUTPUT, .shared_help = true, .fetch_help = true,
        .help_tail = "\nFor a differential flame graph see `hotspur diff --flame`.\n",
        .does_not_apply = true,
        .base_msg = "--base applies to top, peek, list, tree, traces and merge (for a "
                    "differential flame graph: hotspur diff --flame BASE NEW)",
        .extras = extras, .extra = flame_extra, .min_args = 1, .max_args = -1,
        .missing_msg = "missing profile FILE (see hotspur flame --help)"};
    hs_analysis_options o;
    const char *output = "flame.html";
    flame_args a = {.palette = "hot"};
    int first = 0;
    int rc = hs_cli_parse(&spec, argc, argv, &o, &a, &output, &first);
    if (rc >= 0)
        return rc;
    hs_analysis_apply_defaults(&o, HS_KIND_NOTRIM);

    char msg[1024];
    int n = argc - first;
    hs_profile **ps = NULL;
    hs_view *v = NULL, *fwd = NULL;
    char *auto_title = NULL;
    if ((rc = hs_acli_load(spec.name, NULL, argv + first, n, true, &ps)) != 0)
        goto done;
    rc = 2;
    if (!a.title && (auto_title = hs_acli_join_names(argv + first, n)))
        a.title = auto_title;
    v = hs_view_build(ps, (size_t)n, NULL, 0, &o, msg, sizeof msg);
    if (!v) {
        hs_cli_fail(spec.name, NULL, msg);
        goto done;
    }
    if (v->warnings && *v->warnings)
        fputs(v->warnings, stderr);
    if (a.reverse) { /* merged at the leaves, as flamegraph.pl --reverse */
        hs_view *r = hs_view_reversed(v, msg, sizeof msg);
        if (!r) {
            hs_cli_fail(spec.name, NULL, msg);
            goto done;
        }
        fwd = v;
        v = r;
    }
    hs_cli_out out;
    char err[512];
    if (hs_cli_out_open(&out, output, err, sizeof err) != 0) {
        hs_cli_fail(spec.name, NULL, err);
        goto done;
    }
    int ok = hs_report_flame_ex(v, a.title, a.palette, out.f, err, sizeof err) == 0;
    if (hs_cli_out_close(&out, ok, err, sizeof err) != 0) {
        fprintf(stderr, "hotspur flame: %s\n", err);
        rc = 1;
        goto done;
    }
    if (strcmp(output, "-") != 0)
        fprintf(stderr, "hotspur flame: wrote %s\n", output);
    rc = 0;
done:
    hs_view_free(v);
    hs_view_free(fwd);
    hs_acli_free_profiles(ps, ps ? n : 0);
    free(auto_title);
    hs_analysis_options_free(&o);
    return rc;
}
