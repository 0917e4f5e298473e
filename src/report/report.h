/* report.h — text reports: value formatting (format.c) and `top` (top.c).
 *
 * Formatting follows pprof's internal/measurement package exactly, so our
 * numbers print the same as `go tool pprof`'s: time in ns/us/ms/s/hrs,
 * memory in B/kB/MB/GB/TB/PB (1024 steps), counts plain, two decimals with
 * a trailing ".00" trimmed.
 *
 * `top` follows pprof's text report at function granularity: a node per
 * function name (inlined frames are nodes of their own, marked "(inline)"),
 * flat = value of samples whose leaf frame is the node, cum = value of
 * samples in which the node appears anywhere, counted once per sample. Nodes
 * whose |cum| is below node_fraction of the total are dropped, as in pprof.
 *
 * The core, hs_top_compute(), takes an already chosen sample index and a
 * profile (which a caller may have filtered first, see analysis/), so filter
 * options plug in without touching it.
 */
#ifndef HS_REPORT_REPORT_H
#define HS_REPORT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

/* ---- formatting (format.c) ---- */

/* Convert value from from_unit to to_unit ("minimum"/"auto" pick the best
 * unit). *out_unit gets the canonical unit name ("ms", "MB") or "" for
 * plain counts, or to_unit when the unit is unknown. pprof's Scale. */
double hs_scale(int64_t value, const char *from_unit, const char *to_unit, const char **out_unit);
/* value scaled to to_unit and printed: "1.20s", "30ms", "512kB", "42".
 * pprof's ScaledLabel. Returns buf. */
char *hs_format_scaled(char *buf, size_t len, int64_t value, const char *from_unit,
                       const char *to_unit);
/* Auto-scaled label of a value (pprof's measurement.Label). */
char *hs_format_value(char *buf, size_t len, int64_t value, const char *unit);
/* value as a percentage of total, 5 wide: "60.00%", "  100%", " 0.5%". */
char *hs_format_percent(char *buf, size_t len, int64_t value, int64_t total);
/* The unit used for a whole report, given the smallest nonzero value shown
 * and the total (pprof's selectOutputUnit with unit "minimum"). Returns a
 * static canonical name, or sample_unit itself. */
const char *hs_output_unit(int64_t min_value, int64_t max_value, const char *sample_unit);
/* A profile time as pprof prints it: "Jan 2, 2006 at 3:04pm (MST)", local time. */
char *hs_format_time(char *buf, size_t len, int64_t time_nanos);

/* ---- top (top.c) ---- */

typedef struct {
    int sample_index;       /* which value of each sample (caller chooses) */
    bool cum_sort;          /* sort by cum instead of flat */
    size_t node_count;      /* show at most this many rows; 0 = all */
    double node_fraction;   /* drop nodes with |cum| < total*fraction (pprof: 0.005) */
    const char *const *active_filters; /* printed under "Active filters:" */
    size_t n_active_filters;
    int64_t total_override; /* if nonzero, the total percentages are of
                               (e.g. the unfiltered profile's total) */
} hs_top_options;

typedef struct {
    const char *name;       /* printable function name */
    int64_t flat, cum;
    bool inline_in;         /* has an incoming inline call edge */
    bool noinline_in;       /* has an incoming ordinary call edge */
} hs_top_row;

typedef struct {
    hs_top_row *rows;       /* sorted, at most node_count */
    size_t n_rows;
    int64_t total;          /* sum of |value| over all samples */
    int64_t flat_sum;       /* sum of flat over the rows shown */
    size_t orig_count;      /* nodes left after the node_fraction cut */
    size_t dropped_nodes;   /* nodes removed by the node_fraction cut */
    const char *unit;       /* output unit for every value of the report */
    const char *sample_unit;
    char **owned;           /* names built by top (e.g. "[libc.so.6]") */
    size_t n_owned;
} hs_top;

void hs_top_options_init(hs_top_options *o);
/* Compute the rows. 0 on success, -1 with a message. */
int hs_top_compute(const hs_profile *p, const hs_top_options *o, hs_top *out, char *err,
                   size_t errlen);
void hs_top_free(hs_top *t);
/* pprof's profile header lines (File/Build ID/comments/Type/Time/Duration). */
int hs_report_print_header(FILE *out, const hs_profile *p, int sample_index, int64_t total,
                           const char *unit);
/* The same with pprof's -divide_by ratio applied to the total and the type
 * printed as "mean_TYPE" under -mean. */
int hs_report_print_header_ex(FILE *out, const hs_profile *p, int sample_index, int64_t total,
                              const char *unit, double ratio, bool mean);
/* Header + "Showing nodes..." + table, exactly as `go tool pprof -top`.
 * Returns -1 when writing fails. */
int hs_top_print(FILE *out, const hs_profile *p, const hs_top_options *o, const hs_top *t);
/* Compute and print. 0 on success, -1 with a message in err. */
int hs_report_top(FILE *out, const hs_profile *p, const hs_top_options *o, char *err,
                  size_t errlen);

/* The offset that turns a runtime address in mapping m into an address of
 * the ELF file at path (64-bit ELF; from the PT_LOAD segment holding the
 * mapping's file offset): file address = address + *delta. 0, or -1 when the
 * file cannot be read as such. */
int hs_report_elf_delta(const char *path, const hs_mapping *m, int64_t *delta);

#endif
