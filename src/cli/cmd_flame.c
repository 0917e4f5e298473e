/* cmd_flame.c — `hotspur flame [-o out.html] [filters] FILE...`: write an
 * interactive, self-contained HTML flame graph (report/flame.c) of one
 * profile or of several merged. Takes the filters every report takes. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            "  -h, --help         show this help\n"
            "\n");
    hs_analysis_options_help(out, HS_KIND_NOTRIM);
    hs_fetch_help(out);
    fprintf(out, "\nFor a differential flame graph see `hotspur diff --flame`.\n");
}

static int hs_flame_fail(const char *msg)
{
    fprintf(stderr, "hotspur flame: %s\n", msg);
    return 2;
}

int hs_cmd_flame(int argc, char **argv)
{
    enum { OPT_TITLE = 0x4900, OPT_PALETTE, OPT_REVERSE };
    static const struct option longopts[] = {
        HS_ANALYSIS_LONGOPTS,
        {"output", required_argument, NULL, 'o'},
        {"title", required_argument, NULL, OPT_TITLE},
        {"palette", required_argument, NULL, OPT_PALETTE},
        {"reverse", no_argument, NULL, OPT_REVERSE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    hs_analysis_options o;
    hs_analysis_options_init(&o);
    const char *output = "flame.html", *title = NULL, *palette = "hot";
    bool reverse = false;
    char msg[1024];
    int c, rc = 2;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long_only(argc, argv, ":ho:", longopts, NULL)) != -1) {
        if (hs_cli_is_trim_option(c) || c == HS_OPT_NORMALIZE || c == HS_OPT_SOURCE_PATH) {
            snprintf(msg, sizeof msg, "option '%s' does not apply to flame", argv[optind - 1]);
            hs_analysis_options_free(&o);
            return hs_flame_fail(msg);
        }
        if (c == HS_OPT_BASE) {
            hs_analysis_options_free(&o);
            return hs_flame_fail("--base applies to top, peek, list, tree, traces and merge (for a differential flame graph: hotspur diff --flame BASE NEW)");
        }
        int r = hs_analysis_parse_option(&o, c, optarg, msg, sizeof msg);
        if (r < 0) {
            hs_analysis_options_free(&o);
            return hs_flame_fail(msg);
        }
        if (r > 0)
            continue;
        switch (c) {
        case 'h':
            hs_flame_usage(stdout);
            hs_analysis_options_free(&o);
            return 0;
        case 'o':
            output = optarg;
            break;
        case OPT_TITLE:
            title = optarg;
            break;
        case OPT_PALETTE:
            if (strcmp(optarg, "hot") && strcmp(optarg, "mem") && strcmp(optarg, "io")) {
                hs_analysis_options_free(&o);
                return hs_flame_fail("--palette must be hot, mem or io (FlameGraph's palettes)");
            }
            palette = optarg;
            break;
        case OPT_REVERSE:
            reverse = true;
            break;
        case ':':
            snprintf(msg, sizeof msg, "option '%s' needs an argument", argv[optind - 1]);
            hs_analysis_options_free(&o);
            return hs_flame_fail(msg);
        default:
            snprintf(msg, sizeof msg, "unknown option '%s' (see hotspur flame --help)",
                     argv[optind - 1]);
            hs_analysis_options_free(&o);
            return hs_flame_fail(msg);
        }
    }
    if (optind >= argc) {
        hs_analysis_options_free(&o);
        return hs_flame_fail("missing profile FILE (see hotspur flame --help)");
    }
    hs_analysis_apply_defaults(&o, HS_KIND_NOTRIM);

    size_t n = (size_t)(argc - optind);
    hs_profile **ps = calloc(n, sizeof *ps);
    hs_view *v = NULL, *fwd = NULL;
    char *auto_title = NULL;
    if (!ps) {
        hs_analysis_options_free(&o);
        return hs_flame_fail("out of memory");
    }
    size_t title_len = 1;
    for (size_t i = 0; i < n; i++) {
        char err[512];
        const char *path = argv[optind + (int)i];
        ps[i] = hs_cli_load(path, NULL, err, sizeof err);
        /* the profile's drop_frames/keep_frames, as pprof applies them on load */
        if (ps[i] && hs_analysis_remove_uninteresting(ps[i], err, sizeof err) < 0) {
            hs_profile_free(ps[i]);
            ps[i] = NULL;
        }
        if (!ps[i]) {
            snprintf(msg, sizeof msg, "%s: %s", path, err);
            hs_flame_fail(msg);
            goto done;
        }
        title_len += strlen(path) + 2;
    }
    if (!title && (auto_title = calloc(1, title_len))) {
        for (size_t i = 0; i < n; i++) {
            if (i)
                strcat(auto_title, ", ");
            strcat(auto_title, argv[optind + (int)i]);
        }
        title = auto_title;
    }
    v = hs_view_build(ps, n, NULL, 0, &o, msg, sizeof msg);
    if (!v) {
        hs_flame_fail(msg);
        goto done;
    }
    if (v->warnings && *v->warnings)
        fputs(v->warnings, stderr);
    if (reverse) { /* merged at the leaves, as flamegraph.pl --reverse */
        hs_view *r = hs_view_reversed(v, msg, sizeof msg);
        if (!r) {
            hs_flame_fail(msg);
            goto done;
        }
        fwd = v;
        v = r;
    }
    hs_cli_out out;
    char err[512];
    if (hs_cli_out_open(&out, output, err, sizeof err) != 0) {
        hs_flame_fail(err);
        goto done;
    }
    int ok = hs_report_flame_ex(v, title, palette, out.f, err, sizeof err) == 0;
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
    for (size_t i = 0; i < n; i++)
        hs_profile_free(ps[i]);
    free(ps);
    free(auto_title);
    hs_analysis_options_free(&o);
    return rc;
}
