/* err.h — the error convention every layer follows: a function that fails
 * returns -1 (or NULL) and writes a one-line message into the caller's
 * buffer (char *err, size_t errlen); hs_err writes it. */
#ifndef HS_BASE_ERR_H
#define HS_BASE_ERR_H

#include <stddef.h>

/* printf into err (nothing when err is NULL or errlen 0). */
void hs_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
