/* dlopener.c — loads a library with dlopen, burns CPU in it, and (with
 * "close") unloads it before burning more CPU in the executable.
 *   dlopener LIB.so keep|close */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void main_burn(long n)
{
    unsigned long x = 3;
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void (*burn)(long) = (void (*)(long))dlsym(h, "dlib_burn");
    if (!burn)
        return 1;
    burn(400000000L);
    if (strcmp(argv[2], "close") == 0 && dlclose(h) != 0)
        return 1;
    main_burn(100000000L);
    return 0;
}
