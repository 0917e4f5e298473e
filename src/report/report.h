/* report.h — value formatting for every report (format.c), and where an
 * address lands in an ELF file (disasm.c; used by callgrind). The reports themselves are in
 * text_reports.h (top, peek, tree, traces, list, diff) and export.h.
 *
 * Formatting follows pprof's internal/measurement package exactly, so our
 * numbers print the same as `go tool pprof`'s: time in ns/us/ms/s/hrs,
 * memory in B/kB/MB/GB/TB/PB (1024 steps), counts plain, two decimals with
 * a trailing ".00" trimmed.
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

/* The offset that turns a runtime address in mapping m into an address of
 * the ELF file at path (64-bit ELF; from the PT_LOAD segment holding the
 * mapping's file offset): file address = address + *delta. 0, or -1 when the
 * file cannot be read as such. */
int hs_report_elf_delta(const char *path, const hs_mapping *m, int64_t *delta);

#endif
