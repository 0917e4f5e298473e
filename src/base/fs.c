/* fs.c — file system helpers every layer shares (fs.h). */
#include "base/fs.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int hs_mkdirs(const char *path, mode_t mode, char *where, size_t wherelen)
{
    char buf[4096];
    if (!*path) {
        errno = ENOENT;
        return -1;
    }
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p && *p != '/')
            continue;
        char c = *p;
        *p = 0;
        if (mkdir(buf, mode) != 0 && errno != EEXIST) {
            int e = errno;
            if (where)
                snprintf(where, wherelen, "%s", buf);
            errno = e;
            return -1;
        }
        if (!c)
            return 0;
        *p = '/';
    }
}

int hs_write_all(int fd, const void *buf, size_t len)
{
    for (const char *p = buf; len > 0;) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
