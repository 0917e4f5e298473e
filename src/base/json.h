/* json.h — JSON strings written the one way: quoted, '"' '\\' and control
 * bytes escaped, '<' '>' '&' as \u003c \u003e \u0026 (safe inside HTML),
 * valid UTF-8 kept as it is and an invalid byte written as U+FFFD, so the
 * output is valid JSON whatever the input bytes. */
#ifndef HS_BASE_JSON_H
#define HS_BASE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Where the pieces go: put(ctx, bytes, n), called with whole escapes. */
typedef void (*hs_json_put)(void *ctx, const void *p, size_t n);

/* s as a JSON string, quotes included, through put. */
void hs_json_write_string(const char *s, hs_json_put put, void *ctx);

/* s as a JSON string, quotes included, on f. */
void hs_json_fput_string(FILE *f, const char *s);

/* s escaped, WITHOUT quotes, appended at b[n] within cap bytes (room is left
 * for a closing quote and a NUL); stops before the first escape that does
 * not fit, so the string stays valid. Returns the new length. */
size_t hs_json_escape_into(char *b, size_t cap, size_t n, const char *s);

#endif
