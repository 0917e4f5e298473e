/* attach_plugin.c — a library attach_daemon dlopens after an attach
 * (attach_heap.sh): its allocations are seen only if the agent rewrote the
 * GOT of a module loaded after it started. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void *site_plugin(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 3, n);
    return p;
}
