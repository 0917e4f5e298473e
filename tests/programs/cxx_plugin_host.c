/* cxx_plugin_host.c — a C program that dlopens the C++ plugin cxx_plugin.so
 * (RTLD_LOCAL), calls its allocation sites and prints their truth table, as
 * heap_sites does:
 *   site NAME ALLOC_OBJECTS ALLOC_BYTES INUSE_OBJECTS INUSE_BYTES LEAK_OBJECTS LEAK_BYTES
 *   cxx_plugin_host PLUGIN.so */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void (*new_array)(int, size_t) = (void (*)(int, size_t))dlsym(h, "site_plugin_new_array");
    void (*new_object)(void) = (void (*)(void))dlsym(h, "site_plugin_new_object");
    if (!new_array || !new_object)
        return 1;
    new_array(10, 1000);
    new_object();
    printf("site site_plugin_new_array 10 10000 0 0 0 0\n");
    printf("site site_plugin_new_object 5 20480 5 20480 0 0\n");
    return 0; /* the kept blocks stay reachable from the plugin's globals */
}
