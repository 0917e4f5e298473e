/* rustnames.c — functions with Rust's mangled symbol names (given with asm
 * labels),
 * each computing for 100 ms of CPU, for tests/integration/symbolize_rust.sh:
 * legacy `_ZN...17h<hash>E` with `$LT$`/`$GT$`/`$u20$` escapes, v0 `_R...`,
 * and a `.llvm.N` suffix. (-g, as every test program: the DWARF linkage
 * names are the mangled ones.) */
#include <time.h>

static volatile unsigned long sink;

static void burn(double ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    double end = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6 + ms;
    unsigned long x = 1;
    do {
        for (int i = 0; i < 20000; i++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
        sink = x;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    } while (ts.tv_sec * 1e3 + ts.tv_nsec / 1e6 < end);
}

#define RUST_FN(cname, sym)                                              \
    __attribute__((noinline, used)) void cname(void) __asm__(sym);       \
    __attribute__((noinline, used)) void cname(void)                     \
    {                                                                    \
        burn(100);                                                       \
        __asm__ volatile("" ::: "memory");                               \
    }

RUST_FN(legacy, "_ZN4core3fmt5write17hd6ecb4b2086faac0E")
RUST_FN(escaped, "_ZN66_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h0123456789abcdefE")
RUST_FN(v0, "_RNvCs15kBYyAo9fc_7mycrate7example")
RUST_FN(llvm, "_ZN5hello4main17h00112233445566aaE.llvm.1234567890")

int main(void)
{
    legacy();
    escaped();
    v0();
    llvm();
    return 0;
}
