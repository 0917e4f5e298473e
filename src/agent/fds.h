/* fds.h — the agent's long-lived file descriptors, kept out of the
 * program's way: moved to a high number with close-on-exec, and identified
 * by device and inode so the agent notices when the program closed one (a
 * daemon's closefrom(3)) or reused its number, and never touches the
 * program's file in its place. */
#ifndef HS_AGENT_FDS_H
#define HS_AGENT_FDS_H

#include <sys/types.h>

typedef struct {
    int fd; /* -1: none */
    dev_t dev;
    ino_t ino;
} hs_fd;

/* Take ownership of fd: move it to a high number (close-on-exec), remember
 * its identity. Returns 0, or -1 (fd closed) if it can't be examined. */
int hs_fd_keep(hs_fd *f, int fd);
/* Whether f still names the file it was given (async-signal-safe). */
int hs_fd_valid(const hs_fd *f);
/* Forget f; closes it only while it is still ours. */
void hs_fd_drop(hs_fd *f);

#endif
