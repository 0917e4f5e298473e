/* status.c — the classic allocation lesson, as a hotspur benchmark.
 *
 * An HTTP server turns status codes into reason phrases on every response.
 * The "before" version (STATUS_FAST=0) returns its answer from a fresh copy
 * of the table, as code that hands out a mutable map would: one malloc and
 * one free per call. The "after" version (STATUS_FAST=1) checks the two
 * codes nearly every response has (200, 404) first and searches the static
 * table for the rest: no allocation at all. The build makes two programs of
 * this one file, status_before and status_after, so `hotspur bench compare`
 * sees the same benchmark names in both (docs/bench.md). */
#include <hotspur/bench.h>
#include <stdlib.h>
#include <string.h>

#ifndef STATUS_FAST
#define STATUS_FAST 0
#endif

typedef struct {
    int code;
    const char *text;
} status_entry;

static const status_entry table[] = {
    {100, "Continue"}, {101, "Switching Protocols"}, {200, "OK"}, {201, "Created"}, {202, "Accepted"},
    {204, "No Content"}, {206, "Partial Content"}, {301, "Moved Permanently"}, {302, "Found"},
    {303, "See Other"}, {304, "Not Modified"}, {307, "Temporary Redirect"}, {308, "Permanent Redirect"},
    {400, "Bad Request"}, {401, "Unauthorized"}, {403, "Forbidden"}, {404, "Not Found"},
    {405, "Method Not Allowed"}, {408, "Request Timeout"}, {409, "Conflict"}, {410, "Gone"},
    {413, "Content Too Large"}, {415, "Unsupported Media Type"}, {429, "Too Many Requests"},
    {500, "Internal Server Error"}, {501, "Not Implemented"}, {502, "Bad Gateway"},
    {503, "Service Unavailable"}, {504, "Gateway Timeout"},
};
#define NTABLE (sizeof table / sizeof table[0])

static const char *search(const status_entry *t, int code)
{
    for (size_t i = 0; i < NTABLE; i++)
        if (t[i].code == code)
            return t[i].text;
    return "Unknown";
}

#if STATUS_FAST
static const char *status_text(int code)
{
    if (code == 200)
        return "OK";
    if (code == 404)
        return "Not Found";
    return search(table, code);
}
#else
static const char *status_text(int code)
{
    status_entry *copy = malloc(sizeof table);
    if (!copy)
        return "Unknown";
    memcpy(copy, table, sizeof table);
    const char *text = search(copy, code);
    free(copy);
    return text;
}
#endif

/* Traffic: mostly 200, some 404, a few others (the mix is fixed). */
static const int traffic[16] = {200, 200, 200, 404, 200, 200, 301, 200, 200, 200, 404, 200, 500, 200, 200, 304};

HS_BENCH(status_text)
{
    unsigned i = 0;
    while (hs_bench_loop(b)) {
        const char *t = status_text(traffic[i++ & 15]);
        hs_do_not_optimize(t);
    }
}

/* One code at a time: where the fast path helps and where it does not. */
HS_BENCH_WITH(status_code, .params = "code=200,503")
{
    int code = (int)hs_bench_arg(b, "code");
    while (hs_bench_loop(b)) {
        hs_do_not_optimize(code);
        const char *t = status_text(code);
        hs_do_not_optimize(t);
    }
}
