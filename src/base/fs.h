/* fs.h — file system helpers every layer shares: mkdir -p, write in full. */
#ifndef HS_BASE_FS_H
#define HS_BASE_FS_H

#include <stddef.h>
#include <sys/types.h>

/* mkdir -p: path and every missing parent, created with mode (an existing
 * directory is fine). 0, or -1 with errno set (ENAMETOOLONG for a path of
 * 4096 bytes or more) and, when where is not NULL, the directory that could
 * not be created copied to where. */
int hs_mkdirs(const char *path, mode_t mode, char *where, size_t wherelen);

/* write(2) until all len bytes are written (again after EINTR). 0, or -1
 * with errno set. */
int hs_write_all(int fd, const void *buf, size_t len);

#endif
