/* cmd_diff.c — `hotspur diff [options] BASE NEW`: compare two profiles of
 * the same type node by node (report/diff.c). The filter options apply to
 * both profiles. */
#include <stdbool.h>
#include <string.h>

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
            "                     diff.html) instead of the table: widths from NEW, red\n"
            "                     grew, blue shrank, stacks only in BASE kept as thin\n"
            "                     markers and shown by the 'Base widths' toggle\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

int hs_cmd_diff(int argc, char **argv)
{
    static const hs_acli_spec spec = {"diff", diff_usage, HS_KIND_TOP, true, true, false,
                                      true, 2, 2};
    hs_analysis_options o;
    hs_analysis_options_init(&o);
    const char *output = NULL;
    int first = 0;
    /* --flame (report/flame.c) is taken out before the shared parser */
    bool flame = false;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--flame") == 0) {
            flame = true;
            memmove(&argv[i], &argv[i + 1], (size_t)(argc - i) * sizeof *argv);
            argc--;
            i--;
        }
    int rc = hs_acli_parse(&spec, argc, argv, &o, &output, &first);
    if (rc >= 0) {
        hs_analysis_options_free(&o);
        return rc;
    }
    if (o.n_base) {
        hs_analysis_options_free(&o);
        return hs_acli_fail(spec.name, NULL, "--base does not apply: diff's first argument is the base");
    }
    hs_analysis_apply_defaults(&o, HS_KIND_TOP);
    char msg[512];
    hs_profile **ps = NULL;
    hs_view *v = NULL;
    hs_graph g = {0};
    FILE *out = stdout;
    rc = hs_acli_load(spec.name, argv + first, 2, true, &ps);
    if (rc)
        goto done;
    v = hs_view_build(&ps[1], 1, &ps[0], 1, &o, msg, sizeof msg);
    if (!v) {
        rc = hs_acli_fail(spec.name, NULL, msg);
        goto done;
    }
    hs_acli_warnings(spec.name, v);
    if (flame) {
        char title[1024];
        snprintf(title, sizeof title, "%s -> %s", argv[first], argv[first + 1]);
        if (!output)
            output = "diff.html";
        if (!(out = fopen(output, "w"))) {
            out = stdout;
            rc = hs_acli_fail(spec.name, output, "cannot open for writing");
        } else if (hs_report_flame_diff(v, title, out, msg, sizeof msg) < 0) {
            rc = hs_acli_fail(spec.name, NULL, msg);
        }
        if (out != stdout && fclose(out) != 0 && rc == 0)
            rc = hs_acli_fail(spec.name, output, "error writing output");
        goto done;
    }
    if (hs_graph_build(v, &o, &g, msg, sizeof msg) < 0) {
        rc = hs_acli_fail(spec.name, NULL, msg);
        goto done;
    }
    if (output && !(out = fopen(output, "w"))) {
        out = stdout;
        rc = hs_acli_fail(spec.name, output, "cannot open for writing");
        goto done;
    }
    if (hs_report_diff(out, v, &g, &o, msg, sizeof msg) < 0)
        rc = hs_acli_fail(spec.name, NULL, msg);
    if (out != stdout && fclose(out) != 0 && rc == 0)
        rc = hs_acli_fail(spec.name, output, "error writing output");
done:
    hs_graph_free(&g);
    hs_view_free(v);
    hs_acli_free_profiles(ps, ps ? 2 : 0);
    hs_analysis_options_free(&o);
    return rc;
}
