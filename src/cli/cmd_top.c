/* cmd_top.c — `hotspur top [options] FILE...`: reads pprof files (gzipped
 * or not; several of the same type are merged) and prints pprof's top
 * report with every shared option of analysis.h: sample index, filters,
 * trimming, granularity (report/text_common.c). Usage and input errors
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
    static const hs_acli_spec spec = {"top", hs_top_usage, HS_KIND_TOP, true, false, false,
                                      true, 1, -1};
    hs_analysis_options o;
    hs_analysis_options_init(&o);
    const char *output = NULL;
    int first = 0;
    int rc = hs_acli_parse(&spec, argc, argv, &o, &output, &first);
    if (rc >= 0) {
        hs_analysis_options_free(&o);
        return rc;
    }
    hs_analysis_apply_defaults(&o, HS_KIND_TOP);
    char msg[512];
    hs_profile *prof = NULL;
    int n = argc - first;
    hs_view *v = NULL;
    hs_graph g = {0};
    FILE *out = stdout;
    rc = hs_acli_load_merged(spec.name, argv + first, n, &o, &prof);
    if (rc)
        goto done;
    v = hs_view_build(&prof, 1, NULL, 0, &o, msg, sizeof msg);
    if (!v) {
        rc = hs_acli_fail(spec.name, NULL, msg);
        goto done;
    }
    hs_acli_warnings(spec.name, v);
    if (hs_graph_build(v, &o, &g, msg, sizeof msg) < 0) {
        rc = hs_acli_fail(spec.name, NULL, msg);
        goto done;
    }
    if (output && !(out = fopen(output, "w"))) {
        out = stdout;
        rc = hs_acli_fail(spec.name, output, "cannot open for writing");
        goto done;
    }
    if (hs_report_top_view(out, v, &g, &o, msg, sizeof msg) < 0)
        rc = hs_acli_fail(spec.name, NULL, msg);
    if (out != stdout && fclose(out) != 0 && rc == 0)
        rc = hs_acli_fail(spec.name, output, "error writing output");
done:
    hs_graph_free(&g);
    hs_view_free(v);
    hs_profile_free(prof);
    hs_analysis_options_free(&o);
    return rc;
}
