/* truncate_shim.c — preloaded into hotspur by tests/integration/
 * input_truncated.sh, it plays another process truncating the input file
 * while hotspur reads it: the first time the file HS_TRUNC_PATH is mapped
 * or read, it is truncated to HS_TRUNC_TO bytes — after the mapping is
 * made (reading the mapping beyond the new end then raises SIGBUS), or
 * after the read has returned at most those first bytes (the next read
 * sees the end). Every other mmap and read passes straight through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static int done;

/* Is fd the file to truncate (not yet truncated)? Then *to is the size. */
static int is_target(int fd, off_t *to)
{
    const char *path = getenv("HS_TRUNC_PATH"), *s = getenv("HS_TRUNC_TO");
    struct stat a, b;
    if (done || !path || !s || fd < 0 || fstat(fd, &a) != 0 || stat(path, &b) != 0)
        return 0;
    if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return 0;
    *to = (off_t)strtoll(s, NULL, 10);
    return 1;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *(*real)(void *, size_t, int, int, int, off_t) =
        (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    void *r = real(addr, len, prot, flags, fd, off);
    off_t to;
    if (r != MAP_FAILED && !(flags & MAP_ANONYMOUS) && is_target(fd, &to)) {
        done = 1;
        if (truncate(getenv("HS_TRUNC_PATH"), to) != 0)
            _exit(97);
    }
    return r;
}

ssize_t read(int fd, void *buf, size_t n)
{
    ssize_t (*real)(int, void *, size_t) = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    off_t to;
    if (!is_target(fd, &to))
        return real(fd, buf, n);
    done = 1;
    ssize_t r = real(fd, buf, n < (size_t)to ? n : (size_t)to);
    if (truncate(getenv("HS_TRUNC_PATH"), to) != 0)
        _exit(97);
    return r;
}
