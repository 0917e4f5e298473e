/* util.c — small helpers for src/analysis: path cleaning and trimming as
 * pprof does them. Nothing here knows about profiles. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_internal.h"

/* Go's filepath.Clean, in place (the write index never passes the read). */
void hs_analysis_clean_path(char *p)
{
    size_t n = strlen(p);
    int rooted = n > 0 && p[0] == '/';
    size_t w = rooted, r = rooted, dotdot = rooted;
    while (r < n) {
        if (p[r] == '/') {
            r++;
        } else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
            r++;
        } else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
            r += 2;
            if (w > dotdot) {
                w--;
                while (w > dotdot && p[w] != '/')
                    w--;
            } else if (!rooted) {
                if (w > 0)
                    p[w++] = '/';
                p[w++] = '.';
                p[w++] = '.';
                dotdot = w;
            }
        } else {
            if ((rooted && w != 1) || (!rooted && w != 0))
                p[w++] = '/';
            while (r < n && p[r] != '/')
                p[w++] = p[r++];
        }
    }
    if (w == 0)
        p[w++] = '.';
    p[w] = '\0';
}

/* pprof's report.trimPath (source.go): a configured prefix, else a search
 * directory's base name found in the path, and always /proc/self/cwd/. */
const char *hs_analysis_trim_path(const char *path, const char *trim, const char *source_path)
{
    if ((!trim || !*trim) && source_path && *source_path) {
        for (const char *d = source_path; *d;) {
            const char *e = strchr(d, ':');
            size_t len = e ? (size_t)(e - d) : strlen(d);
            /* filepath.Base: trailing slashes dropped, last element */
            while (len > 1 && d[len - 1] == '/')
                len--;
            const char *b = d + len;
            while (b > d && b[-1] != '/')
                b--;
            size_t bl = (size_t)(d + len - b);
            char want[4096];
            if (bl == 0 && len > 0) /* "/" */
                snprintf(want, sizeof want, "///");
            else
                snprintf(want, sizeof want, "/%.*s/", (int)(bl ? bl : 1), bl ? b : ".");
            const char *f = strstr(path, want);
            if (f)
                return f + strlen(want);
            d = e ? e + 1 : d + strlen(d);
        }
    }
    const char *t = trim && *trim ? trim : "";
    for (;;) {
        const char *e = strchr(t, ':');
        size_t len = e ? (size_t)(e - t) : strlen(t);
        if (len > 0) {
            bool slash = t[len - 1] == '/';
            if (strncmp(path, t, len) == 0 && (slash || path[len] == '/'))
                return path + len + (slash ? 0 : 1);
        }
        if (!e)
            break;
        t = e + 1;
    }
    static const char *const cwd[] = {"/proc/self/cwd/./", "/proc/self/cwd/"};
    for (size_t i = 0; i < 2; i++)
        if (strncmp(path, cwd[i], strlen(cwd[i])) == 0)
            return path + strlen(cwd[i]);
    return path;
}

const char *hs_an_simplify_func(const char *name, char *buf, size_t len)
{
    if (*name == '.')
        name++;
    snprintf(buf, len, "%s", name);
    for (char *q = buf; (q = strchr(q, '(')) != NULL;) {
        if (strncmp(q, "(anonymous namespace)", 21) == 0) {
            q += 21;
            continue;
        }
        if (q >= buf + 8 && strncmp(q - 8, "operator()", 10) == 0) {
            q += 2;
            continue;
        }
        *q = '\0';
        break;
    }
    return buf;
}
