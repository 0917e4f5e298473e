/* cmd_diff.c — `hotspur diff [options] BASE NEW`: compare two profiles of
 * the same type node by node (report/diff.c). The filter options apply to
 * both profiles. With --significance (two `hotspur serve` queries) a p
 * column says which changes exceed the windows' spread (diff_signif.c). */
#include <stdbool.h>

#include "cli/analysis_cli.h"
#include "cli/commands.h"
#include "cli/diff_signif.h"
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
            "      --significance with BASE and NEW `hotspur serve` queries\n"
            "                     (http://HOST:PORT/api/v1/profile?...) merging several\n"
            "                     windows each: a p column, the Mann-Whitney U test of\n"
            "                     each node's share of every BASE window against every\n"
            "                     NEW one (2 to 32 windows a side; 4 a side are needed\n"
            "                     for p < 0.05), * marking p < 0.05: a change seen in\n"
            "                     (almost) every window, not noise; the web UI's\n"
            "                     significant column (each window is fetched)\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

enum { OPT_FLAME = HS_CLI_EXTRA, OPT_SIGNIF };

typedef struct {
    bool flame;  /* --flame: the differential flame graph (report/flame.c) */
    bool signif; /* --significance: the p column (diff_signif.c) */
} diff_flags;

static int diff_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                      size_t errlen)
{
    (void)o;
    (void)arg;
    (void)err;
    (void)errlen;
    diff_flags *f = ctx;
    if (code == OPT_FLAME)
        f->flame = true;
    else if (code == OPT_SIGNIF)
        f->signif = true;
    return 0;
}

int hs_cmd_diff(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"flame", no_argument, OPT_FLAME}, {"significance", no_argument, OPT_SIGNIF}, {NULL, 0, 0}};
    static const hs_cli_spec spec = {
        .name = "diff", .usage = diff_usage, .kind = HS_KIND_TOP,
        .takes = HS_CLI_FILTERS | HS_CLI_TRIM | HS_CLI_NORMALIZE | HS_CLI_OUTPUT,
        .shared_help = true, .fetch_help = true,
        .base_msg = "--base does not apply: diff's first argument is the base",
        .extras = extras, .extra = diff_extra, .min_args = 2, .max_args = 2};
    hs_analysis_options o;
    const char *output = NULL;
    int first = 0;
    diff_flags fl = {false, false};
    hs_diff_signif sig = {0};
    int rc = hs_cli_parse(&spec, argc, argv, &o, &fl, &output, &first);
    if (rc >= 0)
        return rc;
    if (fl.signif && fl.flame) {
        hs_analysis_options_free(&o);
        return hs_cli_fail(spec.name, NULL, "--significance marks the table, not --flame");
    }
    for (int i = 0; fl.signif && i < 2; i++)
        if (!hs_signif_url_ok(argv[first + i])) {
            hs_analysis_options_free(&o);
            return hs_cli_fail(spec.name, argv[first + i],
                               "--significance needs `hotspur serve` queries (http://HOST:PORT/api/v1/profile?...):"
                               " it tests each window they merge");
        }
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
    if (fl.flame) {
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
    if (fl.signif) {
        if ((rc = hs_diff_significance(spec.name, argv[first], argv[first + 1], &o, v, &sig)))
            goto done;
        if (!sig.p)
            fprintf(stderr, "hotspur diff: --significance: %s; no p column\n", sig.why);
    }
    if (!(out = hs_acli_open_output(spec.name, output))) {
        rc = 2;
        goto done;
    }
    hs_diff_pvalues pv = {sig.p, sig.base_windows, sig.new_windows};
    if (hs_report_diff(out, v, &g, &o, sig.p ? &pv : NULL, msg, sizeof msg) < 0)
        rc = hs_acli_report_fail(spec.name, out, msg);
    rc = hs_acli_close_output(spec.name, out, output, rc);
done:
    hs_diff_signif_free(&sig);
    hs_graph_free(&g);
    hs_view_free(v);
    hs_acli_free_profiles(ps, ps ? 2 : 0);
    hs_analysis_options_free(&o);
    return rc;
}
