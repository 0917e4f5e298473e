/* test_symbolize_names.c — names for code that has no symbol, checked
 * against independent tools on real binaries:
 *  - PLT stubs are "SYM@plt", as objdump names every entry of .plt.got, .plt and
 *    .plt.sec (a test program and Debian's /usr/bin/ls, built with IBT);
 *  - code of stripped libraries (Debian's libz) is named by the file offset
 *    of the .eh_frame FDE that contains it, as readelf lists the FDEs: one
 *    name per function, the same whatever the load address;
 *  - the signal-return trampoline of libc (the FDE readelf shows with the
 *    "S" augmentation) is "__restore_rt";
 *  - Rust symbols (legacy and v0, as rustc 1.95 writes them, with ".llvm."
 *    suffixes) demangle as rustfilt prints them, C++ as c++filt does. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <inttypes.h>

#include "symbolize/symbolize.h"

#define BIAS1 0x555500000000ULL
#define BIAS2 0x7f1200000000ULL

static const char *lookup_name(hs_symbolizer *s, uint64_t addr)
{
    hs_frame fr[16];
    int n = hs_symbolizer_lookup(s, addr, fr, 16);
    return n > 0 ? fr[n - 1].function : NULL;
}

/* Every "<name@plt>:" entry objdump prints for path: link-time address and
 * name; returns the count. */
static size_t objdump_plt(const char *path, uint64_t *addrs, char (*names)[256], size_t max)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "objdump -d --section=.plt --section=.plt.sec --section=.plt.got '%s' 2>/dev/null", path);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char line[1024];
    size_t n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        unsigned long a;
        char name[256];
        if (sscanf(line, "%lx <%255[^>]>:", &a, name) == 2 && strstr(name, "@plt") &&
            !strchr(name, '+') && !strchr(name, '-')) {
            addrs[n] = a;
            snprintf(names[n], sizeof names[n], "%s", name);
            n++;
        }
    }
    pclose(f);
    return n;
}

static void check_plt(const char *path, size_t min_entries)
{
    static uint64_t addrs[4096];
    static char names[4096][256];
    size_t n = objdump_plt(path, addrs, names, 4096);
    assert_true(n >= min_entries);
    hs_symbolizer *s = hs_symbolizer_new();
    assert_int_equal(hs_symbolizer_add_module(s, path, BIAS1, BIAS1, BIAS1 + 0x10000000), 0);
    for (size_t i = 0; i < n; i++) {
        /* objdump prints the mangled name: ours is demangled, then @plt */
        char mangled[256];
        snprintf(mangled, sizeof mangled, "%.*s", (int)(strstr(names[i], "@plt") - names[i]), names[i]);
        char want[600];
        snprintf(want, sizeof want, "%s@plt", hs_symbolizer_demangle(s, mangled));
        const char *got = lookup_name(s, BIAS1 + addrs[i] + 4);
        if (!got || strcmp(got, want) != 0)
            fail_msg("%s: PLT entry at 0x%" PRIx64 ": got %s, want %s", path, addrs[i], got ? got : "(none)",
                     want);
    }
    hs_symbolizer_free(s);
}

static void test_plt_names(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/symbolize_c", getenv("HS_TEST_PROGRAMS"));
    check_plt(path, 2);
    check_plt("/usr/bin/ls", 20); /* Debian's: .plt.sec (IBT), .plt and .plt.got (free@plt...) */
    /* a library whose .plt.got holds most of its stubs (issue 30: they
     * were "libpython3.11.so.1.0+0x..." while .plt stubs had names) */
    check_plt("/usr/lib/x86_64-linux-gnu/libz.so.1", 1);
}

/* readelf's FDE list of path: [lo, hi) pc ranges, and which are signal
 * frames (their CIE's augmentation has "S"). Returns the count. */
static size_t readelf_fdes(const char *path, uint64_t (*r)[2], int *signal, size_t max)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "readelf --debug-dump=frames '%s' 2>/dev/null", path);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    char line[1024];
    unsigned long sig_cies[16];
    size_t n_sig = 0, n = 0;
    unsigned long cie_off = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long off, lo, hi, cie;
        if (sscanf(line, "%lx %*x %*x CIE", &off) == 1 && strstr(line, "CIE"))
            cie_off = off;
        else if (strstr(line, "Augmentation:") && strchr(line, 'S') && n_sig < 16)
            sig_cies[n_sig++] = cie_off;
        else if (n < max && strstr(line, " FDE ") &&
                 sscanf(line, "%*x %*x %*x FDE cie=%lx pc=%lx..%lx", &cie, &lo, &hi) == 3) {
            r[n][0] = lo;
            r[n][1] = hi;
            signal[n] = 0;
            for (size_t k = 0; k < n_sig; k++)
                signal[n] |= sig_cies[k] == cie;
            n++;
        }
    }
    pclose(f);
    return n;
}

/* File offset of link-time address a, from readelf's program headers. */
static uint64_t file_offset(const char *path, uint64_t a)
{
    char cmd[4200], line[1024];
    snprintf(cmd, sizeof cmd, "readelf -lW '%s'", path);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    uint64_t out = a;
    while (fgets(line, sizeof line, f)) {
        unsigned long off, va, pa, fs, ms;
        if (sscanf(line, " LOAD 0x%lx 0x%lx 0x%lx 0x%lx 0x%lx", &off, &va, &pa, &fs, &ms) == 5 && a >= va &&
            a < va + ms)
            out = a - va + off;
    }
    pclose(f);
    return out;
}

static void test_stripped_code_by_fde(void **state)
{
    (void)state;
    const char *lib = "/lib/x86_64-linux-gnu/libz.so.1";
    static uint64_t r[8192][2];
    static int sig[8192];
    size_t n = readelf_fdes(lib, r, sig, 8192);
    assert_true(n > 20);
    hs_symbolizer *a = hs_symbolizer_new(), *b = hs_symbolizer_new();
    assert_int_equal(hs_symbolizer_add_module(a, lib, BIAS1, BIAS1, BIAS1 + 0x1000000), 0);
    assert_int_equal(hs_symbolizer_add_module(b, lib, BIAS2, BIAS2, BIAS2 + 0x1000000), 0);
    size_t unnamed = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i][1] - r[i][0] < 4)
            continue;
        uint64_t mid = r[i][0] + (r[i][1] - r[i][0]) / 2, last = r[i][1] - 1;
        const char *x = lookup_name(a, BIAS1 + mid);
        assert_non_null(x);
        if (!strstr(x, "libz.so.1+"))
            continue; /* a symbol covers it */
        unnamed++;
        char want[128];
        snprintf(want, sizeof want, "libz.so.1+0x%" PRIx64, file_offset(lib, r[i][0]));
        assert_string_equal(x, want);
        assert_string_equal(lookup_name(a, BIAS1 + last), want);        /* one name per function */
        assert_string_equal(lookup_name(b, BIAS2 + r[i][0] + 1), want); /* whatever the load address */
    }
    assert_true(unnamed > 3); /* libz has static functions without symbols */
    hs_symbolizer_free(a);
    hs_symbolizer_free(b);
}

static void test_restore_rt(void **state)
{
    (void)state;
    const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
    static uint64_t r[16384][2];
    static int sig[16384];
    size_t n = readelf_fdes(libc, r, sig, 16384), found = 0;
    hs_symbolizer *s = hs_symbolizer_new();
    assert_int_equal(hs_symbolizer_add_module(s, libc, BIAS1, BIAS1, BIAS1 + 0x1000000), 0);
    for (size_t i = 0; i < n; i++) {
        if (!sig[i])
            continue;
        found++;
        /* the unwinder reports the trampoline's exact pc (one byte into the FDE) */
        const char *x = lookup_name(s, BIAS1 + r[i][0] + 1);
        assert_non_null(x);
        assert_string_equal(x, "__restore_rt");
    }
    assert_true(found >= 1);
    hs_symbolizer_free(s);
}

static void test_demangle(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        /* rustc 1.95, legacy mangling */
        {"_ZN1r4work17hbe6834c9008f733fE", "r::work"},
        {"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17ha86af84d9cc65291E",
         "std::rt::lang_start::{{closure}}"},
        {"_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$"
         "17h0b8b8b5e4c34e8d4E",
         "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>"},
        {"_ZN1r4work17hbe6834c9008f733fE.llvm.16349711271226512457", "r::work"},
        /* rustc 1.95, v0 mangling */
        {"_RNvCs6GmmlP4bgsG_1r4work", "r::work"},
        /* C++, and an LTO clone of it */
        {"_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)"},
        {"_Z3fooi.llvm.123", "foo(int) [clone .llvm.123]"}, /* as c++filt prints it */
        /* not mangled */
        {"main", "main"},
        {"_Zfoo", "_Zfoo"},
    };
    hs_symbolizer *s = hs_symbolizer_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(hs_symbolizer_demangle(s, cases[i][0]), cases[i][1]);
    hs_symbolizer_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plt_names),
        cmocka_unit_test(test_stripped_code_by_fde),
        cmocka_unit_test(test_restore_rt),
        cmocka_unit_test(test_demangle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
