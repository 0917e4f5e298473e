/* analysis_cli.h — what the report commands share after their options are
 * parsed (cli_options.h): loading profiles in any format we read, merging
 * them with --base subtracted, filter warnings, the -o output file. */
#ifndef HS_CLI_ANALYSIS_CLI_H
#define HS_CLI_ANALYSIS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/analysis.h"
#include "cli/cli_options.h"
#include "profile/profile.h"

/* Read n profile files (format `from` as for hs_cli_load: NULL detects
 * pprof, collapsed, perf script), applying each profile's
 * drop_frames/keep_frames when prune is set; 0 on success, 2 with a message
 * printed. */
int hs_acli_load(const char *cmd, const char *from, char **files, int n, bool prune,
                 hs_profile ***out);
void hs_acli_free_profiles(hs_profile **ps, int n);
/* Read n profile files and merge them into one (as pprof does with several
 * sources), subtracting o->base's profiles when given (o may be NULL); *out
 * is the profile itself when n == 1 and there is no base. 0, or 2 with a
 * message. */
int hs_acli_load_merged(const char *cmd, char **files, int n, const hs_analysis_options *o,
                        hs_profile **out);

/* hs_acli_load_merged, then the view of the merged profile (*v) with its
 * filter warnings printed. 0, or 2 with a message. */
int hs_acli_load_view(const char *cmd, char **files, int n, const hs_analysis_options *o,
                      hs_profile **prof, hs_view **v);

/* The -o FILE of a text report (NULL: stdout); NULL with the message
 * printed when it cannot be opened (exit 2). */
FILE *hs_acli_open_output(const char *cmd, const char *output);
/* Close it (nothing for stdout): rc, or 1 with a message when writing
 * failed and rc was 0. */
int hs_acli_close_output(const char *cmd, FILE *out, const char *output, int rc);
/* A report into `out` failed with `msg`: print it; the exit status is 1
 * when writing failed (a full disk, a closed pipe: as when the final flush
 * fails, whatever the report's size), else 2 (the input or the options). */
int hs_acli_report_fail(const char *cmd, FILE *out, const char *msg);

/* "a, b, c" from n names (the default title of flame and graph); malloc'd,
 * NULL when out of memory. */
char *hs_acli_join_names(char **names, int n);

/* Print the view's filter warnings on stderr. */
void hs_acli_warnings(const char *cmd, const hs_view *v);

#endif
