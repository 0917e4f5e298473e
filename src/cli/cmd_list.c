/* cmd_list.c — `hotspur list [options] RE FILE...`: annotated source of
 * the functions matching RE, flat and cum per line (report/list.c), as
 * `go tool pprof -list`; and `hotspur disasm RE FILE...`, the annotated
 * machine code (report/disasm.c), as `go tool pprof -disasm`. */
#include "cli/analysis_cli.h"
#include "cli/commands.h"
#include "report/text_reports.h"

static void list_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur list [options] RE FILE...\n"
            "\n"
            "Print the source of every function whose name matches the regex RE (RE2,\n"
            "as pprof; unanchored) with the flat and cum value of each line, as\n"
            "`go tool pprof -list`. Source files are read from the path recorded in the\n"
            "profile; when it is not there, a note says so.\n"
            "\n"
            "      --source-path DIR  also look for sources under DIR (the recorded path\n"
            "                     with leading directories dropped one at a time)\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

typedef int (*annotate_fn)(FILE *out, const hs_view *v, const hs_analysis_options *o,
                           const hs_regex *rx, const char *rx_text, char *err, size_t errlen);

/* list and disasm: RE FILE..., a view at one granularity with object names
 * and start lines kept (pprof's ObjNames), then the report. */
static int annotate_cmd(const hs_cli_spec *spec, int argc, char **argv, hs_granularity gran,
                        annotate_fn report)
{
    hs_analysis_options o;
    const char *output = NULL;
    int first = 0;
    int rc = hs_cli_parse(spec, argc, argv, &o, NULL, &output, &first);
    if (rc >= 0)
        return rc;
    char msg[512];
    hs_regex rx;
    const char *rx_text = argv[first++];
    if (hs_analysis_regcomp(&rx, rx_text, spec->name, msg, sizeof msg) < 0) {
        hs_analysis_options_free(&o);
        return hs_cli_fail(spec->name, NULL, msg);
    }
    o.granularity = gran; /* whatever granularity was asked */
    o.obj_names = true;   /* list's window starts at the function's start line, as pprof's */
    hs_analysis_apply_defaults(&o, HS_KIND_NOTRIM);
    hs_profile *prof = NULL;
    hs_view *v = NULL;
    FILE *out = NULL;
    if ((rc = hs_acli_load_view(spec->name, argv + first, argc - first, &o, &prof, &v)) != 0)
        goto done;
    if (!(out = hs_acli_open_output(spec->name, output))) {
        rc = 2;
        goto done;
    }
    if (report(out, v, &o, &rx, rx_text, msg, sizeof msg) < 0)
        rc = hs_acli_report_fail(spec->name, out, msg);
    rc = hs_acli_close_output(spec->name, out, output, rc);
done:
    hs_view_free(v);
    hs_profile_free(prof);
    hs_regex_free(&rx);
    hs_analysis_options_free(&o);
    return rc;
}

int hs_cmd_list(int argc, char **argv)
{
    static const hs_cli_spec spec = {
        .name = "list", .usage = list_usage, .kind = HS_KIND_NOTRIM,
        .takes = HS_CLI_FILTERS | HS_CLI_BASE | HS_CLI_OUTPUT | HS_CLI_SOURCE_PATH,
        .shared_help = true, .fetch_help = true, .min_args = 2, .max_args = -1};
    return annotate_cmd(&spec, argc, argv, HS_GRAN_LINES, hs_report_list);
}

static void disasm_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur disasm [options] RE FILE...\n"
            "\n"
            "Disassemble every function whose name matches RE and has samples, from the\n"
            "profiled binaries on disk (binutils' nm and objdump), with the flat and cum\n"
            "value of each instruction, as `go tool pprof -disasm`.\n"
            "\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         show this help\n");
}

int hs_cmd_disasm(int argc, char **argv)
{
    static const hs_cli_spec spec = {
        .name = "disasm", .usage = disasm_usage, .kind = HS_KIND_NOTRIM,
        .takes = HS_CLI_FILTERS | HS_CLI_BASE | HS_CLI_OUTPUT,
        .shared_help = true, .fetch_help = true, .min_args = 2, .max_args = -1};
    return annotate_cmd(&spec, argc, argv, HS_GRAN_ADDRESSES, hs_report_disasm);
}
