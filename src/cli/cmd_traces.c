/* cmd_traces.c — the per-sample reports: `hotspur traces [options] FILE...`
 * (every sample with its labels, value and stack, as `go tool pprof
 * -traces`) and `hotspur tags` (the label report, as `go tool pprof
 * -tags`). */
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

static void tags_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur tags [options] FILE...\n"
            "\n"
            "For every label key of the samples that pass the filters, the total value and\n"
            "each label value's share, as `go tool pprof -tags`. Numeric labels are shown\n"
            "in their unit; --tagshow/--taghide choose the keys. Several FILEs of the same\n"
            "type are merged.\n"
            "\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

enum { REP_TRACES, REP_TAGS, REP_RAW };

static int sample_report(const hs_cli_spec *sp, int argc, char **argv, int mode)
{
    const hs_cli_spec spec = *sp;
    hs_analysis_options o;
    const char *output = NULL;
    int first = 0;
    int rc = hs_cli_parse(&spec, argc, argv, &o, NULL, &output, &first);
    if (rc >= 0)
        return rc;
    o.untrimmed_paths = mode != REP_TAGS; /* pprof's -traces prints file names untrimmed */
    o.each_sample = true;                 /* every sample printed, in profile order */
    char msg[512];
    hs_profile **ps = NULL;
    int n = argc - first;
    hs_view *v = NULL;
    hs_profile *merged = NULL;
    FILE *out = NULL;
    if (o.n_base) { /* --base: merged with the bases subtracted */
        int nfiles = n;
        n = 0;
        rc = hs_acli_load_merged(spec.name, argv + first, nfiles, &o, &merged);
        if (rc)
            goto done;
    } else {
        rc = hs_acli_load(spec.name, NULL, argv + first, n, false, &ps);
        if (rc)
            goto done;
        /* pprof merges identical samples (same locations and labels) on load,
         * even of a single profile, then applies drop_frames/keep_frames;
         * traces shows the merged samples */
        merged = hs_analysis_merge(ps, (size_t)n, msg, sizeof msg);
        if (!merged || hs_analysis_remove_uninteresting(merged, msg, sizeof msg) < 0) {
            rc = hs_cli_fail(spec.name, NULL, msg);
            goto done;
        }
    }
    if (mode != REP_RAW && !(v = hs_view_build(&merged, 1, NULL, 0, &o, msg, sizeof msg))) {
        rc = hs_cli_fail(spec.name, NULL, msg);
        goto done;
    }
    if (v)
        hs_acli_warnings(spec.name, v);
    if (!(out = hs_acli_open_output(spec.name, output))) {
        rc = 2;
        goto done;
    }
    int r = mode == REP_RAW    ? hs_report_raw(out, merged, msg, sizeof msg)
            : mode == REP_TAGS ? hs_report_tags(out, v, &o, msg, sizeof msg)
                               : hs_report_traces(out, v, &o, msg, sizeof msg);
    if (r < 0)
        rc = hs_acli_report_fail(spec.name, out, msg);
    rc = hs_acli_close_output(spec.name, out, output, rc);
done:
    hs_view_free(v);
    hs_profile_free(merged);
    hs_acli_free_profiles(ps, n);
    hs_analysis_options_free(&o);
    return rc;
}

int hs_cmd_traces(int argc, char **argv)
{
    static const hs_cli_spec spec = {
        .name = "traces", .usage = traces_usage, .kind = HS_KIND_NOTRIM,
        .takes = HS_CLI_FILTERS | HS_CLI_BASE | HS_CLI_OUTPUT,
        .shared_help = true, .fetch_help = true, .min_args = 1, .max_args = -1};
    return sample_report(&spec, argc, argv, REP_TRACES);
}

int hs_cmd_tags(int argc, char **argv)
{
    static const hs_cli_spec spec = {
        .name = "tags", .usage = tags_usage, .kind = HS_KIND_NOTRIM,
        .takes = HS_CLI_FILTERS | HS_CLI_BASE | HS_CLI_OUTPUT,
        .shared_help = true, .fetch_help = true, .min_args = 1, .max_args = -1};
    return sample_report(&spec, argc, argv, REP_TAGS);
}

static void raw_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur raw FILE...\n"
            "\n"
            "Dump the profile as `go tool pprof -raw` does: header, every sample's values\n"
            "and location ids with its labels, every location with its lines, every\n"
            "mapping (after merging several FILEs and applying the profile's\n"
            "drop_frames/keep_frames, as pprof does on load).\n"
            "\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

int hs_cmd_raw(int argc, char **argv)
{
    static const hs_cli_spec spec = {
        .name = "raw", .usage = raw_usage, .kind = HS_KIND_NOTRIM,
        .takes = HS_CLI_OUTPUT,
        .shared_help = false, .fetch_help = true, .min_args = 1, .max_args = -1};
    return sample_report(&spec, argc, argv, REP_RAW);
}
