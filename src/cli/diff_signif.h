/* diff_signif.h — `hotspur diff --significance BASE_URL NEW_URL`: which
 * changes are larger than the spread of the windows each side merges. Both
 * arguments are `hotspur serve` profile queries (.../api/v1/profile?...);
 * each side's windows are listed (/api/v1/profiles), fetched one by one
 * (the side's URL with id=ID) and viewed with the command's options; a
 * node's share of each window's total is one observation, and the
 * Mann-Whitney U test of the base windows' shares against the new ones'
 * (harness/stats.c) gives its p-value, as /api/v1/diff?significance=1
 * does for the web UI (src/server/query_shape.c). */
#ifndef HS_CLI_DIFF_SIGNIF_H
#define HS_CLI_DIFF_SIGNIF_H

#include <stddef.h>

#include "analysis/analysis.h"

/* The test is computed with HS_SIGNIF_MIN_WINDOWS .. HS_SIGNIF_MAX_WINDOWS
 * windows on each side (the server's bounds). */
#define HS_SIGNIF_MIN_WINDOWS 2
#define HS_SIGNIF_MAX_WINDOWS 32

typedef struct {
    double *p;             /* p[i]: the p-value of view node i (NAN: not computed) */
    size_t base_windows, new_windows;
    char why[256];         /* when p is NULL: why the test was not computed */
} hs_diff_signif;

/* Is url a `hotspur serve` profile query (.../api/v1/profile[?...])? */
bool hs_signif_url_ok(const char *url);

/* p-values of the nodes of diff view v (of base_url against new_url, built
 * with o). 0 with out->p filled, or out->p NULL and out->why saying why
 * (too few or too many windows); 2 when a fetch or a window failed (the
 * message printed, as the other loads of cmd). */
int hs_diff_significance(const char *cmd, const char *base_url, const char *new_url,
                         const hs_analysis_options *o, const hs_view *v, hs_diff_signif *out);
void hs_diff_signif_free(hs_diff_signif *s);

#endif
