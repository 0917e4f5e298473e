/* analysis_cli.h — argument handling shared by the analysis commands (top,
 * peek, list, tree, traces, diff, merge): the common filter options of
 * analysis.h, -o, --help, positional arguments, loading profiles, and
 * one-line errors with exit status 2. */
#ifndef HS_CLI_ANALYSIS_CLI_H
#define HS_CLI_ANALYSIS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "profile/profile.h"

typedef struct {
    const char *name;         /* command name, for messages */
    void (*usage)(FILE *out); /* prints the command's help (without shared options) */
    hs_report_kind kind;      /* which trimming defaults the help describes */
    bool filters;             /* takes the shared filter options */
    bool normalize;           /* takes --normalize */
    bool source_path;         /* takes --source-path */
    bool output;              /* takes -o FILE */
    int min_args, max_args;   /* positional arguments; max -1 = unlimited */
} hs_acli_spec;

/* Parse argv. Returns -1 to continue (options in o, -o in *output,
 * positional arguments from argv[*first]), else the exit status to return
 * (0 after --help, 2 on a usage error, message printed). */
int hs_acli_parse(const hs_acli_spec *s, int argc, char **argv, hs_analysis_options *o,
                  const char **output, int *first);

/* Read n profile files (pprof, collapsed, perf script), applying each
 * profile's drop_frames/keep_frames when prune is set; 0 on success, 2 with
 * a message printed. */
int hs_acli_load(const char *cmd, char **files, int n, bool prune, hs_profile ***out);
void hs_acli_free_profiles(hs_profile **ps, int n);
/* Read n profile files and merge them into one (as pprof does with several
 * sources), subtracting o->base's profiles when given (o may be NULL); *out
 * is the profile itself when n == 1 and there is no base. 0, or 2 with a
 * message. */
int hs_acli_load_merged(const char *cmd, char **files, int n, const hs_analysis_options *o,
                        hs_profile **out);

/* Print "hotspur CMD: [what: ]msg" on stderr; returns 2. */
int hs_acli_fail(const char *cmd, const char *what, const char *msg);

/* Print the view's filter warnings on stderr. */
void hs_acli_warnings(const char *cmd, const hs_view *v);

#endif
