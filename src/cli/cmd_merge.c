/* cmd_merge.c — `hotspur merge A B ... -o OUT`: merge profiles of the same
 * type into one pprof file (analysis/merge.c); with filter options, the
 * merged profile is filtered before it is written. */
#include "cli/analysis_cli.h"
#include "cli/cmd_export.h"
#include "cli/commands.h"

#include <string.h>

static void merge_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur merge [options] FILE... -o OUT\n"
            "\n"
            "Merge profiles of the same type (same sample types) into one gzipped pprof\n"
            "file: identical stacks with identical labels are summed, functions and\n"
            "locations deduplicated. The filters (--focus, --ignore, --hide, --show,\n"
            "--show-from, --tagfocus, --tagignore) keep or trim samples of the result.\n"
            "\n"
            "  -o, --output OUT   the merged profile (required)\n"
            "  -h, --help         show this help\n"
            "Filters:\n"
            "  --focus RE --ignore RE --show RE --hide RE --show-from RE\n"
            "  --tagfocus [KEY=]VALUE --tagignore [KEY=]VALUE   (see hotspur top --help)\n");
}

int hs_cmd_merge(int argc, char **argv)
{
    static const hs_cli_spec spec = {
        .name = "merge", .usage = merge_usage, .kind = HS_KIND_NOTRIM,
        .takes = HS_CLI_FILTERS | HS_CLI_BASE | HS_CLI_OUTPUT,
        .shared_help = false, .fetch_help = true, .min_args = 1, .max_args = -1};
    hs_analysis_options o;
    const char *output = NULL;
    int first = 0;
    int rc = hs_cli_parse(&spec, argc, argv, &o, NULL, &output, &first);
    if (rc >= 0)
        return rc;
    if (!output) {
        hs_analysis_options_free(&o);
        return hs_cli_fail(spec.name, NULL, "missing -o OUT (see hotspur merge --help)");
    }
    if (o.sample_index || o.granularity_set) {
        hs_analysis_options_free(&o);
        return hs_cli_fail(spec.name, NULL,
                            "--sample-index and granularity options do not apply to merge");
    }
    char msg[512];
    if (hs_cli_check_output(output, msg, sizeof msg) != 0) {
        hs_analysis_options_free(&o);
        return hs_cli_fail(spec.name, NULL, msg);
    }
    hs_profile **ps = NULL;
    int n = argc - first;
    hs_profile *m = NULL, *f = NULL;
    if (o.n_base) { /* --base: the merge with the bases subtracted */
        int nfiles = n;
        n = 0;
        rc = hs_acli_load_merged(spec.name, argv + first, nfiles, &o, &m);
        if (rc)
            goto done;
    } else {
        rc = hs_acli_load(spec.name, NULL, argv + first, n, true, &ps);
        if (rc)
            goto done;
        m = hs_analysis_merge(ps, (size_t)n, msg, sizeof msg);
        if (!m) {
            rc = hs_cli_fail(spec.name, NULL, msg);
            goto done;
        }
    }
    if (o.focus || o.ignore || o.hide || o.show || o.show_from || o.tagfocus || o.tagignore) {
        f = hs_analysis_filter_profile(m, &o, msg, sizeof msg);
        if (!f) {
            rc = hs_cli_fail(spec.name, NULL, msg);
            goto done;
        }
    }
    if (hs_profile_write_file(f ? f : m, output, msg, sizeof msg) != 0)
        rc = hs_cli_fail(spec.name, output, msg) - 1;
done:
    hs_profile_free(f);
    hs_profile_free(m);
    hs_acli_free_profiles(ps, n);
    hs_analysis_options_free(&o);
    return rc;
}
