/* fds.c — see fds.h. The high number is 1000 (or just under a lower
 * RLIMIT_NOFILE): programs rarely reach it, select() users never see it.
 * Numbers alone don't make an fd ours, so every use checks the identity
 * first: fstat() is cheap and async-signal-safe. */
#define _GNU_SOURCE
#include "agent/fds.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static int high_base(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= 1024)
        return 1000;
    return rl.rlim_cur > 16 ? (int)rl.rlim_cur - 8 : 3;
}

int hs_fd_keep(hs_fd *f, int fd)
{
    f->fd = -1;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, high_base());
    if (hi >= 0) {
        close(fd);
        fd = hi;
    } else if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        close(fd);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    f->fd = fd;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    return 0;
}

int hs_fd_valid(const hs_fd *f)
{
    struct stat st;
    return f->fd >= 0 && fstat(f->fd, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino;
}

void hs_fd_drop(hs_fd *f)
{
    if (hs_fd_valid(f))
        close(f->fd);
    f->fd = -1;
}
