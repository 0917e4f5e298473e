/* cmd_traces.c — `hotspur traces [options] FILE...`: every sample with its
 * labels, value and stack, as `go tool pprof -traces`. */
#include "cli/analysis_cli.h"
#include "cli/commands.h"
#include "report/text_reports.h"

static void traces_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur traces [options] FILE...\n"
            "\n"
            "Print every sample that passes the filters: its labels, its value and its\n"
            "call stack (leaf first), as `go tool pprof -traces`. Several FILEs of the\n"
            "same type are merged.\n"
            "\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

int hs_cmd_traces(int argc, char **argv)
{
    static const hs_acli_spec spec = {"traces", traces_usage, HS_KIND_NOTRIM, true, false, false,
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
    char msg[512];
    hs_profile **ps = NULL;
    int n = argc - first;
    hs_view *v = NULL;
    hs_profile *merged = NULL;
    FILE *out = stdout;
    if (o.n_base) { /* --base: merged with the bases subtracted */
        int nfiles = n;
        n = 0;
        rc = hs_acli_load_merged(spec.name, argv + first, nfiles, &o, &merged);
        if (rc)
            goto done;
    } else {
        rc = hs_acli_load(spec.name, argv + first, n, &ps);
        if (rc)
            goto done;
        /* pprof merges identical samples (same locations and labels) on load,
         * even of a single profile; traces shows the merged samples */
        merged = hs_analysis_merge(ps, (size_t)n, msg, sizeof msg);
        if (!merged) {
            rc = hs_acli_fail(spec.name, NULL, msg);
            goto done;
        }
    }
    v = hs_view_build(&merged, 1, NULL, 0, &o, msg, sizeof msg);
    if (!v) {
        rc = hs_acli_fail(spec.name, NULL, msg);
        goto done;
    }
    hs_acli_warnings(spec.name, v);
    if (output && !(out = fopen(output, "w"))) {
        out = stdout;
        rc = hs_acli_fail(spec.name, output, "cannot open for writing");
        goto done;
    }
    if (hs_report_traces(out, v, &o, msg, sizeof msg) < 0)
        rc = hs_acli_fail(spec.name, NULL, msg);
    if (out != stdout && fclose(out) != 0 && rc == 0)
        rc = hs_acli_fail(spec.name, output, "error writing output");
done:
    hs_view_free(v);
    hs_profile_free(merged);
    hs_acli_free_profiles(ps, n);
    hs_analysis_options_free(&o);
    return rc;
}
