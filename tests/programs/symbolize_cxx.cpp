/* symbolize_cxx.cpp — C++ test program for the symbolizer: a function
 * template in a namespace records a return address inside itself and prints
 * it (see symbolize_report.h); the test expects the demangled name and the
 * mangled one as system_name. */
#include "symbolize_report.h"

extern "C" {
void *volatile hs_captured_pc;
__attribute__((noinline)) void hs_capture(void)
{
    hs_captured_pc = __builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
}
}

namespace hs_space {
template <typename T> struct Box {
    T v;
    __attribute__((noinline)) T twice(T k) const
    {
        hs_capture(); /* MARK:twice */
        return v * k * 2;
    }
};
} // namespace hs_space

int main(int argc, char **)
{
    hs_space::Box<long> b{argc};
    long r = b.twice(argc);
    if (hs_report(hs_captured_pc) != 0)
        return 1;
    return r == 0;
}
