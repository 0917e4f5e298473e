/* cmd_diff.c — `hotspur diff [options] BASE NEW`: compare two profiles of
 * the same type node by node (report/diff.c). The filter options apply to
 * both profiles. */
#include <stdbool.h>

#include "cli/analysis_cli.h"
#include "cli/commands.h"
#include "report/export.h"
#include "report/text_reports.h"

static void diff_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur diff [options] BASE NEW\n"
            "\n"
            "Compare two profiles of the same type: for every function (or file, line,\n"
            "address) its flat value in BASE and NEW, the delta NEW-BASE and the delta as\n"
            "a percentage of BASE (\"new\": absent from BASE, \"gone\": absent from NEW),\n"
            "sorted by the size of the delta. With --cum the cumulative values are\n"
            "compared instead. A profile compared with itself gives all-zero deltas.\n"
            "\n"
            "      --normalize    scale NEW so its total equals BASE's before comparing\n"
            "                     (compare shapes of profiles with different totals)\n"
            "      --flame        write a differential flame graph (HTML, default\n"
            "                     diff.html) instead of the table: each frame as wide\n"
            "                     as the larger of BASE and NEW, red grew, blue shrank,\n"
            "                     frames only in BASE labelled (gone), only in NEW (new)\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

enum { OPT_FLAME = HS_CLI_EXTRA };

static int diff_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                      size_t errlen)
{
    (void)o;
    (void)arg;
    (void)err;
    (void)errlen;
    if (code == OPT_FLAME)
        *(bool *)ctx = true;
    return 0;
}

int hs_cmd_diff(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {{"flame", no_argument, OPT_FLAME}, {NULL, 0, 0}};
    static const hs_cli_spec spec = {
        .name = "diff", .usage = diff_usage, .kind = HS_KIND_TOP,
        .takes = HS_CLI_FILTERS | HS_CLI_TRIM | HS_CLI_NORMALIZE | HS_CLI_OUTPUT,
        .shared_help = true, .fetch_help = true,
        .base_msg = "--base does not apply: diff's first argument is the base",
        .extras = extras, .extra = diff_extra, .min_args = 2, .max_args = 2};
    hs_analysis_options o;
    const char *output = NULL;
    int first = 0;
    bool flame = false; /* --flame: the differential flame graph (report/flame.c) */
    int rc = hs_cli_parse(&spec, argc, argv, &o, &flame, &output, &first);
    if (rc >= 0)
        return rc;
    hs_analysis_apply_defaults(&o, HS_KIND_TOP);
    char msg[512];
    hs_profile **ps = NULL;
    hs_view *v = NULL;
    hs_graph g = {0};
    FILE *out = NULL;
    rc = hs_acli_load(spec.name, NULL, argv + first, 2, true, &ps);
    if (rc)
        goto done;
    v = hs_view_build(&ps[1], 1, &ps[0], 1, &o, msg, sizeof msg);
    if (!v) {
        rc = hs_cli_fail(spec.name, NULL, msg);
        goto done;
    }
    hs_acli_warnings(spec.name, v);
    if (flame) {
        char title[1024];
        snprintf(title, sizeof title, "%s -> %s", argv[first], argv[first + 1]);
        if (!output)
            output = "diff.html";
        if (!(out = hs_acli_open_output(spec.name, output)))
            rc = 2;
        else if (hs_report_flame_diff(v, title, out, msg, sizeof msg) < 0)
            rc = hs_acli_report_fail(spec.name, out, msg);
        rc = hs_acli_close_output(spec.name, out, output, rc);
        goto done;
    }
    if (hs_graph_build(v, &o, &g, msg, sizeof msg) < 0) {
        rc = hs_cli_fail(spec.name, NULL, msg);
        goto done;
    }
    if (!(out = hs_acli_open_output(spec.name, output))) {
        rc = 2;
        goto done;
    }
    if (hs_report_diff(out, v, &g, &o, msg, sizeof msg) < 0)
        rc = hs_acli_report_fail(spec.name, out, msg);
    rc = hs_acli_close_output(spec.name, out, output, rc);
done:
    hs_graph_free(&g);
    hs_view_free(v);
    hs_acli_free_profiles(ps, ps ? 2 : 0);
    hs_analysis_options_free(&o);
    return rc;
}
