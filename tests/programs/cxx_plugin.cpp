// cxx_plugin.cpp — a C++ plugin that cxx_plugin_host (a C program, no
// libstdc++ of its own) dlopens with RTLD_LOCAL, as ar and nm load GCC's LTO
// plugin: libstdc++ then arrives as the plugin's dependency, outside the
// global scope, and the agent's operator new must still find it
// (tests/integration/heap_cxx_plugin.sh). Each site's figures are known:
// the truth table is printed by the host.
#include <cstddef>

#define NOINLINE __attribute__((noinline, noclone, no_icf))

namespace {
struct Block {
    char bytes[4096];
};
Block *g_kept[5];
} // namespace

extern "C" NOINLINE void site_plugin_new_array(int n, std::size_t size)
{
    for (int i = 0; i < n; i++) {
        char *volatile p = new char[size];
        p[0] = 1;
        delete[] p;
    }
}

extern "C" NOINLINE void site_plugin_new_object(void)
{
    for (Block *&b : g_kept)
        b = new Block(); // kept: in use at exit
}
