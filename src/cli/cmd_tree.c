/* cmd_tree.c — `hotspur tree [options] FILE...` and `hotspur peek RE
 * [options] FILE...`: callers and callees of every node (tree) or of the
 * nodes matching RE (peek), as `go tool pprof -tree` / `-peek`. */
#include "cli/analysis_cli.h"
#include "cli/commands.h"
#include "report/text_reports.h"

#include <stdlib.h>

static void tree_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur tree [options] FILE...\n"
            "\n"
            "For every function of the call graph (the top 80 by default), its callers and\n"
            "callees with the value of each call and its share of the function's cum, as\n"
            "`go tool pprof -tree`. Several FILEs of the same type are merged.\n"
            "\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

static void peek_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur peek [options] RE FILE...\n"
            "\n"
            "For every function whose name matches the regex RE (RE2, as pprof,\n"
            "unanchored), its callers and callees with the value of each call and its\n"
            "share of the function's cum, as `go tool pprof -peek`. Nothing is trimmed.\n"
            "Several FILEs of the same type are merged.\n"
            "\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

static int run(const hs_cli_spec *spec, int argc, char **argv, bool peek)
{
    hs_analysis_options o;
    const char *output = NULL;
    int first = 0;
    int rc = hs_cli_parse(spec, argc, argv, &o, NULL, &output, &first);
    if (rc >= 0)
        return rc;
    char msg[512];
    hs_regex rx;
    const char *rx_text = NULL;
    if (peek) {
        rx_text = argv[first++];
        if (hs_analysis_regcomp(&rx, rx_text, "peek", msg, sizeof msg) < 0) {
            hs_analysis_options_free(&o);
            return hs_cli_fail(spec->name, NULL, msg);
        }
    }
    hs_analysis_apply_defaults(&o, spec->kind);
    hs_profile *prof = NULL;
    int n = argc - first;
    hs_view *v = NULL;
    hs_graph g = {0};
    FILE *out = NULL;
    if ((rc = hs_acli_load_view(spec->name, argv + first, n, &o, &prof, &v)) != 0)
        goto done;
    if (hs_graph_build(v, &o, &g, msg, sizeof msg) < 0) {
        rc = hs_cli_fail(spec->name, NULL, msg);
        goto done;
    }
    if (!(out = hs_acli_open_output(spec->name, output))) {
        rc = 2;
        goto done;
    }
    if (hs_report_tree(out, v, &g, &o, peek ? &rx : NULL, rx_text, msg, sizeof msg) < 0)
        rc = hs_acli_report_fail(spec->name, out, msg);
    rc = hs_acli_close_output(spec->name, out, output, rc);
done:
    hs_graph_free(&g);
    hs_view_free(v);
    hs_profile_free(prof);
    if (peek)
        hs_regex_free(&rx);
    hs_analysis_options_free(&o);
    return rc;
}

int hs_cmd_tree(int argc, char **argv)
{
    static const hs_cli_spec spec = {
        .name = "tree", .usage = tree_usage, .kind = HS_KIND_GRAPH,
        .takes = HS_CLI_FILTERS | HS_CLI_TRIM | HS_CLI_BASE | HS_CLI_OUTPUT,
        .shared_help = true, .fetch_help = true, .min_args = 1, .max_args = -1};
    return run(&spec, argc, argv, false);
}

int hs_cmd_peek(int argc, char **argv)
{
    static const hs_cli_spec spec = {
        .name = "peek", .usage = peek_usage, .kind = HS_KIND_NOTRIM,
        .takes = HS_CLI_FILTERS | HS_CLI_BASE | HS_CLI_OUTPUT,
        .shared_help = true, .fetch_help = true, .min_args = 2, .max_args = -1};
    return run(&spec, argc, argv, true);
}
