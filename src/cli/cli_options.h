/* cli_options.h — the one option parser of every hotspur command (the
 * reports top, peek, list, tree, traces, tags, raw, disasm, diff, merge,
 * flame, graph, convert, web, and record, agent, attach, ctl, serve, bench
 * compare, debuginfo, symbolize). A command describes itself with an
 * hs_cli_spec: which groups of the shared options of analysis.h it takes
 * (filters and values, trimming, --base/--diff-base, --normalize,
 * --source-path, -o), its own extra options (the table, handed one by one
 * to its extra callback), its positional arguments and its --help text;
 * hs_cli_parse does the rest through base/cmdline.h, the same way for
 * every command:
 *  - long options as --opt=value or --opt value, unique prefixes, and pprof's
 *    single-dash spellings (-cum, -nodecount=3) and underscores
 *    (-sample_index=0, --show_from RE);
 *  - -n N for --nodecount where trimming applies, -o FILE, -h/--help;
 *  - repeated options reach the callback each time (--scrape A --scrape B);
 *    -- ends the options; with in_order the first positional argument does
 *    too (record's command line: record -F 99 ./prog -F 3);
 *  - errors as one line "hotspur CMD: ..." on stderr and exit status 2:
 *    unknown option, option needing a value, bad value, an option of
 *    another command ("does not apply" wording where the spec asks for it),
 *    missing or extra positional arguments.
 * --help prints the command's usage, then the shared options' help when the
 * command takes them, the URL paragraph (fetch.h) and a tail; an extra the
 * usage text does not name is listed after it, so --help never hides an
 * option the table takes. */
#ifndef HS_CLI_OPTIONS_H
#define HS_CLI_OPTIONS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis/analysis.h"

/* Groups of shared options a command takes (hs_cli_spec.takes). */
enum {
    HS_CLI_FILTERS = 1 << 0,     /* sample index, filters, granularity, values */
    HS_CLI_TRIM = 1 << 1,        /* --nodecount (-n), --nodefraction, --edgefraction, --cum */
    HS_CLI_BASE = 1 << 2,        /* --base, --diff-base */
    HS_CLI_NORMALIZE = 1 << 3,   /* --normalize */
    HS_CLI_SOURCE_PATH = 1 << 4, /* --source-path DIR */
    HS_CLI_OUTPUT = 1 << 5,      /* -o, --output FILE */
};

/* First code for a command's own options (after analysis.h's HS_OPT_*). */
#define HS_CLI_EXTRA 0x4900

/* One option of a command's own: a long name (which may shadow a shared
 * option's, as web's --base does), no_argument or required_argument, and a
 * code >= HS_CLI_EXTRA handed to the spec's extra callback. */
typedef struct {
    const char *name;
    int has_arg;
    int code;
} hs_cli_extra;

typedef struct hs_cli_spec hs_cli_spec;
struct hs_cli_spec {
    const char *name;         /* command name, for messages */
    void (*usage)(FILE *out); /* the command's own help text */
    hs_report_kind kind;      /* which trimming defaults the shared help describes */
    unsigned takes;           /* HS_CLI_* groups */
    bool shared_help;         /* --help lists the shared options (hs_analysis_options_help) */
    bool fetch_help;          /* --help ends with the URL paragraph (hs_fetch_help) */
    const char *help_tail;    /* printed last by --help, or NULL */
    bool does_not_apply;      /* a shared option not taken: "option 'X' does not apply to
                                 CMD" rather than "unknown option 'X' (see ...)" */
    const char *base_msg;     /* message for --base/--diff-base when not taken, or NULL */
    const hs_cli_extra *extras; /* the command's own options, {NULL} ended, or NULL */
    const char *short_names;  /* the extras' one-letter spellings, one character per extra in
                                 order (' ': none; not h, o or n), or NULL: ctl's "t" for -t */
    /* Called for each extra option: 0, or -1 with a message in err (exit 2). */
    int (*extra)(void *ctx, hs_analysis_options *o, int code, const char *arg, char *err,
                 size_t errlen);
    bool in_order;            /* options end at the first positional argument (getopt's "+") */
    int min_args, max_args;   /* positional arguments; max -1 = unlimited */
    const char *missing_msg;  /* when fewer than min_args (default "missing arguments") */
};

/* Parse argv (argv[0] is the command name). o is initialized here (o may
 * be NULL when the spec takes no shared option) and freed again unless -1
 * is returned. Options go to o, -o FILE to
 * *output (left as it was when not given; output may be NULL when the spec
 * has no HS_CLI_OUTPUT), extras to spec->extra(ctx, ...). Returns -1 to go
 * on with positional arguments from argv[*first]; otherwise the exit status
 * to return: 0 after --help, 2 after a usage error (message printed). */
int hs_cli_parse(const hs_cli_spec *s, int argc, char **argv, hs_analysis_options *o,
                 void *ctx, const char **output, int *first);

/* A decimal integer in [lo, hi], the whole of s, into *out: 0, or -1. */
int hs_cli_parse_long(const char *s, long lo, long hi, long *out);

/* A positive duration (base/units.h: 500ms, 10s, 2m, 1d) in seconds into
 * *out: 0, or -1. */
int hs_cli_parse_seconds(const char *s, double *out);

/* From now on SIGINT and SIGTERM set the flag returned (no SA_RESTART, so a
 * sleep is cut short): a long-running command's "stop and write". */
volatile sig_atomic_t *hs_cli_stop_on_signals(void);

/* Print "hotspur CMD: [what: ]msg" on stderr; returns 2. */
int hs_cli_fail(const char *cmd, const char *what, const char *msg);

#endif
