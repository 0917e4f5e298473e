/* err.c — hs_err (err.h). */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>

void hs_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
