/* cmd_top.c — `hotspur top [options] FILE...`: reads pprof files (gzipped
 * or not; several of the same type are merged) and prints pprof's top
 * report with every shared option of analysis.h: sample index, filters,
 * trimming, granularity (report/top.c). Usage and input errors
 * print one line on stderr and exit 2. */
#include "cli/analysis_cli.h"
#include "cli/commands.h"
#include "report/text_reports.h"

static void hs_top_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur top [options] FILE...\n"
            "\n"
            "List the functions with the highest flat value (value in samples where the\n"
            "function is the leaf), as `go tool pprof -top` does. FILE is any pprof\n"
            "profile, gzipped or not ('-' reads stdin); several FILEs of the same type\n"
            "are merged.\n"
            "\n"
            "  -n N               same as --nodecount N\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

int hs_cmd_top(int argc, char **argv)
{
    static const hs_cli_spec spec = {
        .name = "top", .usage = hs_top_usage, .kind = HS_KIND_TOP,
        .takes = HS_CLI_FILTERS | HS_CLI_TRIM | HS_CLI_BASE | HS_CLI_OUTPUT,
        .shared_help = true, .fetch_help = true, .min_args = 1, .max_args = -1};
    hs_analysis_options o;
    const char *output = NULL;
    int first = 0;
    int rc = hs_cli_parse(&spec, argc, argv, &o, NULL, &output, &first);
    if (rc >= 0)
        return rc;
    hs_analysis_apply_defaults(&o, HS_KIND_TOP);
    char msg[512];
    hs_profile *prof = NULL;
    int n = argc - first;
    hs_view *v = NULL;
    hs_graph g = {0};
    FILE *out = NULL;
    if ((rc = hs_acli_load_view(spec.name, argv + first, n, &o, &prof, &v)) != 0)
        goto done;
    if (hs_graph_build(v, &o, &g, msg, sizeof msg) < 0) {
        rc = hs_cli_fail(spec.name, NULL, msg);
        goto done;
    }
    if (!(out = hs_acli_open_output(spec.name, output))) {
        rc = 2;
        goto done;
    }
    if (hs_report_top_view(out, v, &g, &o, msg, sizeof msg) < 0)
        rc = hs_acli_report_fail(spec.name, out, msg);
    rc = hs_acli_close_output(spec.name, out, output, rc);
done:
    hs_graph_free(&g);
    hs_view_free(v);
    hs_profile_free(prof);
    hs_analysis_options_free(&o);
    return rc;
}
