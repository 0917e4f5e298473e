/* regex.h — the regular expressions behind every filter (focus, ignore,
 * show, hide, show_from, tagfocus, peek/list/disasm patterns, drop_frames):
 * RE2's syntax, as pprof's filters are, with RE2's guarantees — matching in
 * time linear in the subject, compiling in bounded memory
 * (HS_REGEX_MAX_MEM), patterns longer than HS_REGEX_MAX_LEN refused. So a
 * pattern from an untrusted query URL cannot exhaust the server. A C shim
 * over RE2 (regex.cc); matching from several threads at once is safe. */
#ifndef HS_ANALYSIS_REGEX_H
#define HS_ANALYSIS_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HS_REGEX_MAX_LEN 4096            /* bytes of pattern */
#define HS_REGEX_MAX_MEM (4 << 20)       /* RE2's budget for the compiled program */

/* A compiled pattern; a value, so it can sit in a struct. {NULL} is "none". */
typedef struct hs_regex {
    void *re2;
} hs_regex;

/* Compile PATTERN (unanchored; a leading (?i) ignores case). 0, or -1 with
 * RE2's reason in ERR (and OUT left {NULL}). */
int hs_regex_compile(hs_regex *out, const char *pattern, char *err, size_t errlen);

/* Does RE match somewhere in S? A {NULL} regex matches nothing. */
bool hs_regex_match(const hs_regex *re, const char *s);

/* Free RE's program and reset it to {NULL}; {NULL} is fine. */
void hs_regex_free(hs_regex *re);

#ifdef __cplusplus
}
#endif

#endif
