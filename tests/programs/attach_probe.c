/* attach_probe.c — a library loaded into a running process by `hotspur
 * attach --load` in tests (attach_inject.sh): its constructor counts the
 * loads; attach_probe_mark(PATH) writes "pid P loads N errno E" to PATH and
 * returns 4242. errno is left as the function found it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int loads;

__attribute__((constructor)) static void probe_init(void)
{
    loads++;
}

__attribute__((visibility("default"))) long attach_probe_mark(const char *path)
{
    int saved = errno;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        char line[128];
        int n = snprintf(line, sizeof line, "pid %d loads %d\n", (int)getpid(), loads);
        if (write(fd, line, (size_t)n) != n)
            n = -1;
        close(fd);
    }
    errno = saved;
    return 4242;
}
