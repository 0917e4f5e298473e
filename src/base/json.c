/* json.c — JSON string escaping (json.h): the one escaper every writer of
 * JSON uses (the server's answers and errors, the exporters, the
 * benchmark harness's reports). */
#include "base/json.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
static size_t hs_utf8_len(const unsigned char *s)
{
    size_t n;
    uint32_t cp;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xe0) == 0xc0)
        n = 2, cp = s[0] & 0x1f;
    else if ((s[0] & 0xf0) == 0xe0)
        n = 3, cp = s[0] & 0x0f;
    else if ((s[0] & 0xf8) == 0xf0)
        n = 4, cp = s[0] & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* The bytes a JSON string holds as they are: printable ASCII but for '"',
 * '\\' and what HTML gives a meaning ('<', '>', '&'). NUL is not one. */
#define HS_JP1(c) ((c) >= 0x20 && (c) < 0x80 && (c) != '"' && (c) != '\\' && (c) != '<' && \
                   (c) != '>' && (c) != '&')
#define HS_JP4(c) HS_JP1(c), HS_JP1((c) + 1), HS_JP1((c) + 2), HS_JP1((c) + 3)
#define HS_JP16(c) HS_JP4(c), HS_JP4((c) + 4), HS_JP4((c) + 8), HS_JP4((c) + 12)
#define HS_JP64(c) HS_JP16(c), HS_JP16((c) + 16), HS_JP16((c) + 32), HS_JP16((c) + 48)
static const bool hs_json_plain[256] = {HS_JP64(0), HS_JP64(64), HS_JP64(128), HS_JP64(192)};

void hs_json_write_string(const char *s, hs_json_put put, void *ctx)
{
    put(ctx, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c;) {
        const unsigned char *run = c; /* bytes written as they are, at once */
        while (hs_json_plain[*c])
            c++;
        if (c > run)
            put(ctx, run, (size_t)(c - run));
        if (!*c)
            break;
        switch (*c) {
        case '"': put(ctx, "\\\"", 2); break;
        case '\\': put(ctx, "\\\\", 2); break;
        case '\n': put(ctx, "\\n", 2); break;
        case '\r': put(ctx, "\\r", 2); break;
        case '\t': put(ctx, "\\t", 2); break;
        case '<': put(ctx, "\\u003c", 6); break;
        case '>': put(ctx, "\\u003e", 6); break;
        case '&': put(ctx, "\\u0026", 6); break;
        default:
            if (*c < 0x20) {
                char u[8];
                snprintf(u, sizeof u, "\\u%04x", *c);
                put(ctx, u, 6);
            } else { /* >= 0x80 */
                size_t n = hs_utf8_len(c);
                if (n) {
                    put(ctx, c, n);
                    c += n;
                } else { /* invalid UTF-8: U+FFFD keeps the JSON valid */
                    put(ctx, "\\ufffd", 6);
                    c++;
                }
                continue;
            }
        }
        c++;
    }
    put(ctx, "\"", 1);
}


struct buf_ctx {
    char *b;
    size_t cap, n;
    bool full;
};

/* Append a piece, never a cut one (the JSON stays valid); the delimiting
 * quotes are the only one-byte "\"" pieces (a quote inside is two bytes): left out. */
static void buf_put(void *ctx, const void *p, size_t len)
{
    struct buf_ctx *c = ctx;
    if (len == 1 && *(const char *)p == '"')
        return;
    if (c->full || c->n + len + 2 > c->cap) { /* room for a closing quote and NUL */
        c->full = true;
        return;
    }
    memcpy(c->b + c->n, p, len);
    c->n += len;
}

size_t hs_json_escape_into(char *b, size_t cap, size_t n, const char *s)
{
    struct buf_ctx c = {b, cap, n, false};
    hs_json_write_string(s, buf_put, &c);
    return c.n;
}

static void file_put(void *ctx, const void *p, size_t len)
{
    fwrite(p, 1, len, (FILE *)ctx);
}

void hs_json_fput_string(FILE *f, const char *s)
{
    hs_json_write_string(s, file_put, f);
}
