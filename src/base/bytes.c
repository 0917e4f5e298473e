/* bytes.c — hs_bytes_printf (bytes.h); the rest of the buffer is inline. */
#include "base/bytes.h"

#include <stdarg.h>
#include <stdio.h>

void hs_bytes_printf(hs_bytes *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if (hs_bytes_reserve(b, (size_t)n) < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}
