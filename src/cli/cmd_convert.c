/* cmd_convert.c — `hotspur convert [--from FMT] --to FMT [-o OUT] IN...`:
 * between pprof, FlameGraph collapsed stacks, callgrind, speedscope JSON
 * and `perf script` text (import only), with the filters every report
 * takes. The work is in report/ (collapsed.c, callgrind.c, speedscope.c,
 * perfscript.c) and profile/ (the pprof codec). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/analysis_cli.h"
#include "cli/cmd_export.h"
#include "cli/commands.h"

static void hs_convert_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur convert [--from FMT] --to FMT [-o OUT] [options] IN...\n"
            "\n"
            "Convert a profile between formats. Several INs are merged.\n"
            "\n"
            "  --from FMT      input format: auto (default: detected from the content),\n"
            "                  pprof (gzipped or not), collapsed (FlameGraph folded\n"
            "                  stacks: 'root;caller;leaf COUNT' per line), perf-script\n"
            "                  (the text `perf script` prints for `perf record -g` data),\n"
            "                  otlp (an OpenTelemetry ExportProfilesServiceRequest,\n"
            "                  protobuf or JSON, gzipped or not; never auto-detected)\n"
            "  --to FMT        output format: pprof (gzipped profile.proto, all sample\n"
            "                  types kept), collapsed, callgrind (for callgrind_annotate\n"
            "                  and KCachegrind; per-line positions when the profile has\n"
            "                  line numbers), speedscope (JSON for speedscope.app),\n"
            "                  otlp (an OpenTelemetry ExportProfilesServiceRequest in\n"
            "                  protobuf, one OTLP profile per sample type: docs/otlp.md)\n"
            "  -o, --output F  file to write (default '-': stdout; pprof output is\n"
            "                  binary and is not written to a terminal)\n"
            "  -h, --help      show this help\n"
            "\n"
            "Imported collapsed stacks have one sample type, samples/count; perf script\n"
            "imports have samples/count plus, when perf printed periods, one type per\n"
            "event (cpu-clock and task-clock in nanoseconds), with pid/tid/comm labels.\n"
            "The text outputs carry one value: --sample-index picks it. --to pprof keeps\n"
            "every value and the full detail, so it takes the filters but not\n"
            "--sample-index or a granularity.\n");
}

static int hs_has_filters(const hs_analysis_options *o)
{
    return o->focus || o->ignore || o->show || o->hide || o->show_from || o->tagfocus ||
           o->tagignore;
}

/* hs_profile_encode_to's sink: the gzip members are written as they are
 * compressed (by the encoder's threads, one at a time). */
static int hs_convert_write(void *ctx, const void *buf, size_t len)
{
    return fwrite(buf, 1, len, ctx) == len ? 0 : -1;
}

/* --to pprof and --to otlp: merge, filter, encode. */
static int hs_convert_pprof(hs_profile **ps, size_t n, const hs_analysis_options *o, bool otlp,
                            hs_cli_out *out, char *err, size_t errlen)
{
    hs_profile *merged = NULL, *filtered = NULL;
    const hs_profile *p = ps[0];
    int rc = -1;
    if (n > 1) {
        if (!(merged = hs_analysis_merge(ps, n, err, errlen)))
            return -1;
        p = merged;
    }
    if (hs_has_filters(o)) {
        if (!(filtered = hs_analysis_filter_profile(p, o, err, errlen)))
            goto done;
        p = filtered;
    }
    if (otlp) {
        hs_bytes b = {0};
        int st = hs_otlp_encode(&p, 1, NULL, &b, err, errlen);
        if (st == 0 && fwrite(b.p, 1, b.n, out->f) != b.n) {
            snprintf(err, errlen, "write error");
            st = -1;
        }
        hs_bytes_free(&b);
        if (st)
            goto done;
    } else if (hs_profile_encode_to(p, hs_convert_write, out->f, err, errlen) != 0) {
        goto done;
    }
    rc = 0;
done:
    hs_profile_free(filtered);
    hs_profile_free(merged);
    return rc;
}

typedef struct {
    const char *from, *to;
} convert_args;

enum { OPT_FROM = HS_CLI_EXTRA, OPT_TO };

static int convert_extra(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                         size_t errlen)
{
    convert_args *a = ctx;
    (void)o;
    (void)err;
    (void)errlen;
    if (code == OPT_FROM)
        a->from = arg;
    else
        a->to = arg;
    return 0;
}

int hs_cmd_convert(int argc, char **argv)
{
    static const hs_cli_extra extras[] = {
        {"from", required_argument, OPT_FROM},
        {"to", required_argument, OPT_TO},
        {NULL, 0, 0},
    };
    static const hs_cli_spec spec = {
        .name = "convert", .usage = hs_convert_usage, .kind = HS_KIND_NOTRIM,
        .takes = HS_CLI_FILTERS | HS_CLI_OUTPUT, .shared_help = true, .fetch_help = true,
        .does_not_apply = true,
        .base_msg = "--base applies to top, peek, list, tree, traces and merge",
        .extras = extras, .extra = convert_extra, .min_args = 0, .max_args = -1};
    static const char *const froms[] = {"auto", "pprof", "collapsed", "perf-script", "otlp"};
    static const char *const tos[] = {"pprof", "collapsed", "callgrind", "speedscope", "otlp"};
    hs_analysis_options o;
    const char *output = "-";
    convert_args a = {.from = "auto"};
    int first = 0;
    int rc = hs_cli_parse(&spec, argc, argv, &o, &a, &output, &first);
    if (rc >= 0)
        return rc;
    rc = 2;
    const char *from = a.from, *to = a.to;
    int from_ok = 0, to_ok = 0;
    for (size_t i = 0; i < sizeof froms / sizeof *froms; i++)
        from_ok |= strcmp(from, froms[i]) == 0;
    for (size_t i = 0; to && i < sizeof tos / sizeof *tos; i++)
        to_ok |= strcmp(to, tos[i]) == 0;
    const char *bad = NULL;
    bool binary = to && (strcmp(to, "pprof") == 0 || strcmp(to, "otlp") == 0);
    if (!from_ok)
        bad = "--from must be auto, pprof, collapsed, perf-script or otlp";
    else if (!to)
        bad = "missing --to pprof|collapsed|callgrind|speedscope|otlp (see hotspur convert --help)";
    else if (!to_ok)
        bad = "--to must be pprof, collapsed, callgrind, speedscope or otlp";
    else if (first >= argc)
        bad = "missing input file (see hotspur convert --help)";
    else if (binary && (o.sample_index || o.granularity_set))
        bad = strcmp(to, "otlp") == 0 ? "--to otlp keeps every sample type at full detail: --sample-index and "
                                        "granularity options do not apply"
                                      : "--to pprof keeps every sample type at full detail: --sample-index and "
                                        "granularity options do not apply";
    else if (binary && strcmp(output, "-") == 0 && isatty(STDOUT_FILENO))
        bad = strcmp(to, "otlp") == 0 ? "otlp output is binary: give -o FILE or redirect stdout"
                                      : "pprof output is binary: give -o FILE or redirect stdout";
    if (bad) {
        hs_analysis_options_free(&o);
        return hs_cli_fail(spec.name, NULL, bad);
    }
    hs_analysis_apply_defaults(&o, HS_KIND_NOTRIM);
    /* callgrind positions are source lines: unless told otherwise, build the
     * view per line (functions are still grouped by name). */
    if (strcmp(to, "callgrind") == 0 && !o.granularity_set)
        o.granularity = HS_GRAN_LINES;
    if (strcmp(to, "callgrind") == 0)
        o.obj_names = true; /* nodes keep their object file, for ob= (as pprof's ObjNames) */

    int n = argc - first;
    hs_profile **ps = NULL;
    hs_view *v = NULL;
    char msg[1024], err[512];
    if (hs_acli_load(spec.name, from, argv + first, n, true, &ps) != 0)
        goto done;
    if (!binary) {
        v = hs_view_build(ps, (size_t)n, NULL, 0, &o, msg, sizeof msg);
        if (!v) {
            hs_cli_fail(spec.name, NULL, msg);
            goto done;
        }
        if (v->warnings && *v->warnings)
            fputs(v->warnings, stderr);
    }
    hs_cli_out out;
    if (hs_cli_out_open(&out, output, err, sizeof err) != 0) {
        hs_cli_fail(spec.name, NULL, err);
        goto done;
    }
    int ok;
    if (binary)
        ok = hs_convert_pprof(ps, (size_t)n, &o, strcmp(to, "otlp") == 0, &out, err, sizeof err) == 0;
    else if (strcmp(to, "collapsed") == 0)
        ok = hs_export_collapsed(v, out.f, err, sizeof err) == 0;
    else if (strcmp(to, "callgrind") == 0)
        ok = hs_export_callgrind(v, out.f, err, sizeof err) == 0;
    else if (o.sample_index || ps[0]->n_sample_types < 2)
        ok = hs_export_speedscope(v, argv[first], out.f, err, sizeof err) == 0;
    else /* every sample type its own profile, the default one opened first */
        ok = hs_export_speedscope_types(v, ps, (size_t)n, &o, argv[first], out.f, err,
                                        sizeof err) == 0;
    if (!ok)
        fprintf(stderr, "hotspur convert: %s\n", err);
    if (hs_cli_out_close(&out, ok, err, sizeof err) != 0) {
        if (ok)
            fprintf(stderr, "hotspur convert: %s\n", err);
        rc = 1;
        goto done;
    }
    rc = 0;
done:
    hs_view_free(v);
    hs_acli_free_profiles(ps, ps ? n : 0);
    hs_analysis_options_free(&o);
    return rc;
}
