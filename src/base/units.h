/* units.h — the one grammar for durations and sizes, read the same way from
 * command-line flags, environment variables (HOTSPUR_PERIOD), query strings
 * (from=now-90m) and store URLs.
 *
 * Duration: a non-negative decimal number, optionally fractional, then a
 * unit: ns, us, ms, s, m, h, d (24 h) or w (7 d); no unit means seconds.
 * "500ms", "1.5h", "36h", "1d", "90" (seconds). No sign, no space, no
 * exponent; at most 100 years.
 *
 * Size: a non-negative integer, then optionally k, m, g or t (powers of
 * 1024, either case) with an optional "b" or "ib": "16m", "512KiB", "1g",
 * "1048576". */
#ifndef HS_BASE_UNITS_H
#define HS_BASE_UNITS_H

#include <stdint.h>

#define HS_DURATION_MAX_NS ((int64_t)100 * 366 * 86400 * 1000000000)

/* Parse a duration into nanoseconds. 0, or -1 (nothing written) if s is not
 * a duration by the grammar above. Zero is a duration: callers that need a
 * positive one check. */
int hs_parse_duration_ns(const char *s, int64_t *ns);

/* Parse a size into bytes. 0, or -1 (nothing written). */
int hs_parse_size(const char *s, uint64_t *bytes);

/* The grammar, for messages: "a duration like 500ms, 10s, 2m, 36h or 1d". */
#define HS_DURATION_HINT "a duration like 500ms, 10s, 2m, 36h or 1d"

#endif
