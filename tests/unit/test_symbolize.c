/* test_symbolize.c — the symbolizer against real binaries: the test programs
 * in tests/programs (an -O2 -g C program with a forced-inline function, as
 * PIE, non-PIE, stripped and stripped + .gnu_debuglink; a C++ template in a
 * namespace), this test executable itself, libc with Debian's libc6-dbg, the
 * vDSO from memory, broken inputs, profiles, and lookup speed. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

#define MAXF 16

/* ---- helpers ---- */

static void prog_path(char *buf, size_t len, const char *name)
{
    const char *dir = getenv("HS_TEST_PROGRAMS");
    assert_non_null(dir);
    snprintf(buf, len, "%s/%s", dir, name);
}

typedef struct {
    uint64_t bias, lo, hi, pc;
} prog_run;

/* Run a test program; it prints its load bias, range and a captured pc. */
static void run_prog(const char *path, prog_run *r)
{
    FILE *f = popen(path, "r");
    assert_non_null(f);
    unsigned long b = 0, lo = 0, hi = 0, pc = 0;
    int n = fscanf(f, "bias %lx range %lx %lx pc %lx", &b, &lo, &hi, &pc);
    int st = pclose(f);
    assert_int_equal(n, 4);
    assert_int_equal(st, 0);
    *r = (prog_run){b, lo, hi, pc};
}

/* Line of the "MARK:<what>" comment in tests/programs/<file>. */
static int64_t marker_line(const char *file, const char *what)
{
    const char *src = getenv("HS_SOURCE_DIR");
    assert_non_null(src);
    char path[4096], mark[64], line[1024];
    snprintf(path, sizeof path, "%s/tests/programs/%s", src, file);
    snprintf(mark, sizeof mark, "MARK:%s ", what);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int64_t n = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        if (strstr(line, mark))
            found = n;
    }
    fclose(f);
    assert_true(found > 0);
    return found;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

typedef struct {
    uintptr_t addr, bias, lo, hi;
    char path[4096];
    int found;
} mod_query;

static int find_mod_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    mod_query *q = arg;
    (void)size;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        lo = a < lo ? a : lo;
        hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
    }
    if (q->addr < lo || q->addr >= hi)
        return 0;
    q->bias = info->dlpi_addr;
    q->lo = lo;
    q->hi = hi;
    if (info->dlpi_name && *info->dlpi_name) {
        snprintf(q->path, sizeof q->path, "%s", info->dlpi_name);
    } else {
        ssize_t n = readlink("/proc/self/exe", q->path, sizeof q->path - 1);
        q->path[n > 0 ? n : 0] = '\0';
    }
    q->found = 1;
    return 1;
}

/* Register the loaded module (as dl_iterate_phdr sees it) containing addr. */
static void add_module_of(hs_symbolizer *s, const void *addr, mod_query *q)
{
    memset(q, 0, sizeof *q);
    q->addr = (uintptr_t)addr;
    dl_iterate_phdr(find_mod_cb, q);
    assert_true(q->found);
    assert_int_equal(hs_symbolizer_add_module(s, q->path, q->bias, q->lo, q->hi), 0);
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* ---- the C program: inline chain, PIE / non-PIE / stripped / debuglink ---- */

static void check_inline_chain(const char *prog, int expect_full)
{
    char path[4096];
    prog_path(path, sizeof path, prog);
    prog_run r;
    run_prog(path, &r);
    hs_symbolizer *s = hs_symbolizer_new();
    assert_non_null(s);
    assert_int_equal(hs_symbolizer_add_module(s, path, r.bias, r.lo, r.hi), 0);
    hs_frame f[MAXF];
    int n = hs_symbolizer_lookup(s, r.pc, f, MAXF);
    if (expect_full) {
        assert_int_equal(n, 2);
        assert_string_equal(f[0].function, "hs_inlined_leaf");
        assert_string_equal(f[0].system_name, "hs_inlined_leaf");
        assert_true(ends_with(f[0].file, "tests/programs/symbolize_c.c"));
        assert_int_equal(f[0].line, marker_line("symbolize_c.c", "leaf"));
        assert_true(f[0].start_line > 0 && f[0].start_line < f[0].line);
        assert_string_equal(f[1].function, "hs_outer");
        assert_true(ends_with(f[1].file, "tests/programs/symbolize_c.c"));
        assert_int_equal(f[1].line, marker_line("symbolize_c.c", "outer"));
        assert_true(f[1].start_line > 0 && f[1].start_line < f[1].line);
        /* max smaller than the chain keeps the outer function */
        assert_int_equal(hs_symbolizer_lookup(s, r.pc, f, 1), 1);
        assert_string_equal(f[0].function, "hs_outer");
    } else {
        /* stripped: .dynsym names the exported outer function, nothing more */
        assert_int_equal(n, 1);
        assert_string_equal(f[0].function, "hs_outer");
        assert_string_equal(f[0].file, "");
        assert_int_equal(f[0].line, 0);
    }
    const char *bid = hs_symbolizer_build_id(s, r.pc);
    assert_int_equal(strlen(bid), 40);
    assert_int_equal(strspn(bid, "0123456789abcdef"), 40);
    hs_symbolizer_free(s);
}

static void test_inline_pie(void **state)
{
    (void)state;
    check_inline_chain("symbolize_c", 1);
}

static void test_inline_nopie(void **state)
{
    (void)state;
    char path[4096];
    prog_path(path, sizeof path, "symbolize_c_nopie");
    prog_run r;
    run_prog(path, &r);
    assert_int_equal(r.bias, 0); /* really ET_EXEC */
    check_inline_chain("symbolize_c_nopie", 1);
}

static void test_stripped_dynsym(void **state)
{
    (void)state;
    check_inline_chain("symbolize_c.stripped", 0);
}

static void test_stripped_debuglink(void **state)
{
    (void)state;
    check_inline_chain("symbolize_c.linked", 1);
}

/* Bias from a profile-style mapping (start, limit, file offset). */
static void test_add_mapping(void **state)
{
    (void)state;
    char path[4096];
    prog_path(path, sizeof path, "symbolize_c");
    prog_run r;
    run_prog(path, &r);
    hs_symbolizer *s = hs_symbolizer_new();
    /* the first segment starts at file offset 0, link address 0 */
    assert_int_equal(hs_symbolizer_add_mapping(s, path, r.lo, r.hi, 0), 0);
    hs_frame f[MAXF];
    assert_int_equal(hs_symbolizer_lookup(s, r.pc, f, MAXF), 2);
    assert_string_equal(f[1].function, "hs_outer");
    assert_int_equal(hs_symbolizer_add_mapping(s, "/no/such/file", 0x1000, 0x2000, 0), -1);
    hs_symbolizer_free(s);
}

/* ---- C++ ---- */

static void test_cxx_demangle(void **state)
{
    (void)state;
    char path[4096];
    prog_path(path, sizeof path, "symbolize_cxx");
    prog_run r;
    run_prog(path, &r);
    hs_symbolizer *s = hs_symbolizer_new();
    assert_int_equal(hs_symbolizer_add_module(s, path, r.bias, r.lo, r.hi), 0);
    hs_frame f[MAXF];
    int n = hs_symbolizer_lookup(s, r.pc, f, MAXF);
    assert_int_equal(n, 1);
    assert_string_equal(f[0].function, "hs_space::Box<long>::twice(long) const");
    assert_string_equal(f[0].system_name, "_ZNK8hs_space3BoxIlE5twiceEl");
    assert_true(ends_with(f[0].file, "tests/programs/symbolize_cxx.cpp"));
    assert_int_equal(f[0].line, marker_line("symbolize_cxx.cpp", "twice"));
    hs_symbolizer_free(s);
}

/* ---- this process: its own code, libc (separate debug file), the vDSO ---- */

__attribute__((noinline)) int hs_test_self_target(int x)
{
    __asm__ volatile("" ::: "memory");
    return x + 1;
}

static void test_self(void **state)
{
    (void)state;
    hs_symbolizer *s = hs_symbolizer_new();
    mod_query q;
    add_module_of(s, (void *)hs_test_self_target, &q);
    hs_frame f[MAXF];
    int n = hs_symbolizer_lookup(s, (uintptr_t)hs_test_self_target, f, MAXF);
    assert_int_equal(n, 1);
    assert_string_equal(f[0].function, "hs_test_self_target");
    assert_true(ends_with(f[0].file, "tests/unit/test_symbolize.c"));
    assert_true(f[0].line > 0);
    assert_true(f[0].start_line > 0 && f[0].start_line <= f[0].line);
    /* cached answer is identical */
    hs_frame g[MAXF];
    assert_int_equal(hs_symbolizer_lookup(s, (uintptr_t)hs_test_self_target, g, MAXF), 1);
    assert_ptr_equal(g[0].function, f[0].function);
    assert_int_equal(g[0].line, f[0].line);
    hs_symbolizer_free(s);
}

static void test_libc_debug_file(void **state)
{
    (void)state;
    void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    assert_non_null(h);
    void *qs = dlsym(h, "qsort"); /* libc's own, not a sanitizer interceptor */
    assert_non_null(qs);
    hs_symbolizer *s = hs_symbolizer_new();
    mod_query q;
    add_module_of(s, qs, &q);
    hs_frame f[MAXF];
    int n = hs_symbolizer_lookup(s, (uintptr_t)qs, f, MAXF);
    assert_true(n >= 1);
    assert_string_equal(f[n - 1].function, "qsort");
    /* file:line only exist in libc6-dbg's /usr/lib/debug/.build-id/... file */
    assert_true(ends_with(f[n - 1].file, ".c"));
    assert_true(f[n - 1].line > 0);
    /* an address in the middle of a libc function too */
    void *mc = dlsym(h, "malloc");
    assert_non_null(mc);
    n = hs_symbolizer_lookup(s, (uintptr_t)mc + 8, f, MAXF);
    assert_true(n >= 1);
    assert_true(strstr(f[n - 1].function, "malloc") != NULL);
    assert_true(f[0].line > 0);
    dlclose(h);
    hs_symbolizer_free(s);
}

static void test_vdso_image(void **state)
{
    (void)state;
    const unsigned char *img = (const void *)getauxval(AT_SYSINFO_EHDR);
    if (!img)
        skip();
    assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
    /* The image size from its headers; the symbol address from its .dynsym. */
    const ElfW(Ehdr) *eh = (const void *)img;
    size_t size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    Elf *e = elf_memory((char *)img, size);
    assert_non_null(e);
    uint64_t vaddr0 = 0, sym = 0;
    size_t nph = 0;
    assert_int_equal(elf_getphdrnum(e, &nph), 0);
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_offset == 0)
            vaddr0 = ph.p_vaddr;
    }
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sy;
            if (gelf_getsym(d, (int)i, &sy) &&
                strcmp(elf_strptr(e, sh.sh_link, sy.st_name), "__vdso_clock_gettime") == 0)
                sym = sy.st_value;
        }
    }
    elf_end(e);
    assert_true(sym != 0);
    uint64_t bias = (uintptr_t)img - vaddr0;
    hs_symbolizer *s = hs_symbolizer_new();
    assert_int_equal(hs_symbolizer_add_image(s, "[vdso]", img, size, bias, (uintptr_t)img,
                                             (uintptr_t)img + size),
                     0);
    hs_frame f[MAXF];
    int n = hs_symbolizer_lookup(s, bias + sym + 4, f, MAXF);
    assert_int_equal(n, 1);
    assert_true(strcmp(f[0].function, "__vdso_clock_gettime") == 0 ||
                strcmp(f[0].function, "clock_gettime") == 0);
    hs_symbolizer_free(s);
}

/* ---- broken input ---- */

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    void *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void test_bogus_and_broken(void **state)
{
    (void)state;
    int fds = count_fds();
    hs_symbolizer *s = hs_symbolizer_new();
    hs_frame f[MAXF];
    assert_int_equal(hs_symbolizer_lookup(s, 0x10, f, MAXF), 0);          /* nothing registered */
    assert_int_equal(hs_symbolizer_add_module(s, "/no/such/lib.so", 0, 0x1000, 0x2000), -1);
    assert_int_equal(hs_symbolizer_lookup(s, 0x1800, f, MAXF), 0);
    const char *src = getenv("HS_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/unit/test_symbolize.c", src);
    assert_int_equal(hs_symbolizer_add_module(s, path, 0, 0x3000, 0x4000), -1); /* not ELF */
    assert_int_equal(hs_symbolizer_lookup(s, 0x3800, f, MAXF), 0);
    assert_int_equal(hs_symbolizer_add_image(s, "junk", "not an elf", 10, 0, 0x5000, 0x6000), -1);
    assert_int_equal(hs_symbolizer_lookup(s, 0x5800, f, MAXF), 0);
    assert_string_equal(hs_symbolizer_build_id(s, 0x5800), "");

    /* Truncated copies of a real program (with and without its DWARF) and of
     * its debug file next to a debuglinked binary: never crash. */
    char dir[] = "/tmp/hs_symtest_XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *names[] = {"symbolize_c", "symbolize_c.debug", "symbolize_c.linked"};
    size_t cuts[] = {16, 64, 700, 3000, 6000, 9000, 12000, 15000};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        for (size_t i = 0; i < 3; i++) {
            char from[4096], to[4200];
            prog_path(from, sizeof from, names[i]);
            size_t len;
            void *buf = read_whole(from, &len);
            snprintf(to, sizeof to, "%s/%s", dir, names[i]);
            /* the linked binary stays whole so the broken debug file gets read */
            write_file(to, buf, i == 2 ? len : (cuts[k] < len ? cuts[k] : len / 2));
            free(buf);
        }
        for (size_t i = 0; i < 3; i++) {
            hs_symbolizer *t = hs_symbolizer_new();
            char to[4200];
            snprintf(to, sizeof to, "%s/%s", dir, names[i]);
            (void)hs_symbolizer_add_module(t, to, 0x100000, 0x100000, 0x110000);
            for (uint64_t a = 0x100000; a < 0x110000; a += 0x40) {
                int n = hs_symbolizer_lookup(t, a, f, MAXF);
                assert_true(n >= 0 && n <= MAXF);
            }
            hs_symbolizer_free(t);
        }
    }
    for (size_t i = 0; i < 3; i++) {
        char to[4200];
        snprintf(to, sizeof to, "%s/%s", dir, names[i]);
        unlink(to);
    }
    rmdir(dir);
    hs_symbolizer_free(s);
    assert_int_equal(count_fds(), fds);
}

/* More objects than may stay open at once: LRU closing keeps fds bounded,
 * answers stay right, nothing leaks. */
static void test_many_modules_fds(void **state)
{
    (void)state;
    char path[4096];
    prog_path(path, sizeof path, "symbolize_c");
    prog_run r;
    run_prog(path, &r);
    int fds = count_fds();
    hs_symbolizer *s = hs_symbolizer_new();
    enum { N = 120 };
    const uint64_t step = 0x100000000ULL;
    for (uint64_t i = 0; i < N; i++) { /* same file, different bias: different objects */
        uint64_t d = i * step;
        assert_int_equal(hs_symbolizer_add_module(s, path, r.bias + d, r.lo + d, r.hi + d), 0);
    }
    for (int round = 0; round < 2; round++) {
        for (uint64_t i = 0; i < N; i++) {
            hs_frame f[MAXF];
            /* +round: a new address, so the second round reopens evicted objects */
            int n = hs_symbolizer_lookup(s, r.pc + i * step - (uint64_t)round, f, MAXF);
            assert_int_equal(n, 2);
            assert_string_equal(f[1].function, "hs_outer");
            assert_true(count_fds() < fds + 200);
        }
    }
    hs_symbolizer_free(s);
    assert_int_equal(count_fds(), fds);
}

/* ---- profiles ---- */

static const char *fn_name(const hs_profile *p, uint64_t fid)
{
    const hs_function *fn = hs_profile_function(p, fid);
    assert_non_null(fn);
    return hs_profile_string(p, fn->name);
}

static void test_symbolize_profile(void **state)
{
    (void)state;
    hs_symbolizer *s = hs_symbolizer_new();
    mod_query q;
    add_module_of(s, (void *)hs_test_self_target, &q);
    hs_profile *p = hs_profile_new();
    assert_non_null(p);
    uint64_t m1 = hs_profile_add_mapping(p, q.lo, q.hi, 0, q.path, "");
    uint64_t m2 = hs_profile_add_mapping(p, 0x1000, 0x2000, 0, "/opt/gone/libgone.so.1", "");
    assert_true(m1 && m2);
    uint64_t self_addr = (uintptr_t)hs_test_self_target;
    uint64_t l1 = hs_profile_add_location(p, m1, self_addr, NULL, 0);
    uint64_t l2 = hs_profile_add_location(p, m1, q.lo, NULL, 0); /* ELF header: no symbol */
    uint64_t l3 = hs_profile_add_location(p, m2, 0x1234, NULL, 0);
    uint64_t keep_fn = hs_profile_add_function(p, "already", "already", "x.c", 1);
    hs_line keep = {keep_fn, 7, 0};
    uint64_t l4 = hs_profile_add_location(p, m1, self_addr, &keep, 1);
    uint64_t l5 = hs_profile_add_location(p, m1, self_addr, NULL, 0); /* same address again */
    assert_true(l1 && l2 && l3 && l4 && l5);

    assert_int_equal(hs_symbolize_profile(s, p), 0);

    const hs_location *loc = hs_profile_location(p, l1);
    assert_int_equal(loc->n_lines, 1);
    assert_string_equal(fn_name(p, loc->lines[0].function_id), "hs_test_self_target");
    assert_true(loc->lines[0].line > 0);
    const hs_function *fn = hs_profile_function(p, loc->lines[0].function_id);
    assert_true(ends_with(hs_profile_string(p, fn->filename), "test_symbolize.c"));
    assert_true(fn->start_line > 0);
    /* the profile dedups functions: same id for the same address */
    const hs_location *loc5 = hs_profile_location(p, l5);
    assert_int_equal(loc5->n_lines, 1);
    assert_int_equal(loc5->lines[0].function_id, hs_profile_location(p, l1)->lines[0].function_id);

    char want[4200];
    loc = hs_profile_location(p, l2);
    assert_int_equal(loc->n_lines, 1);
    const char *base = strrchr(q.path, '/') ? strrchr(q.path, '/') + 1 : q.path;
    /* no symbol and no FDE: the module and the file offset (the ELF header's,
     * 0), never the run-time address */
    snprintf(want, sizeof want, "%s+0x0", base);
    assert_string_equal(fn_name(p, loc->lines[0].function_id), want);

    loc = hs_profile_location(p, l3);
    assert_int_equal(loc->n_lines, 1);
    assert_string_equal(fn_name(p, loc->lines[0].function_id), "0x1234 [libgone.so.1]");

    loc = hs_profile_location(p, l4); /* untouched */
    assert_int_equal(loc->n_lines, 1);
    assert_int_equal(loc->lines[0].function_id, keep_fn);
    assert_int_equal(loc->lines[0].line, 7);

    const hs_mapping *m = hs_profile_mapping(p, m1);
    assert_int_equal(strlen(hs_profile_string(p, m->build_id)), 40);
    assert_string_equal(hs_profile_string(p, m->build_id), hs_symbolizer_build_id(s, q.lo));
    assert_true(m->has_functions && m->has_filenames && m->has_line_numbers &&
                m->has_inline_frames);
    m = hs_profile_mapping(p, m2);
    assert_string_equal(hs_profile_string(p, m->build_id), "");
    assert_false(m->has_functions);

    /* the symbolized profile survives the codec */
    void *buf = NULL;
    size_t len = 0;
    char err[256];
    assert_int_equal(hs_profile_encode(p, &buf, &len, err, sizeof err), 0);
    hs_profile *back = hs_profile_decode(buf, len, err, sizeof err);
    assert_non_null(back);
    assert_string_equal(fn_name(back, hs_profile_location(back, l1)->lines[0].function_id),
                        "hs_test_self_target");
    hs_profile_free(back);
    free(buf);
    hs_profile_free(p);
    hs_symbolizer_free(s);
}

/* ---- speed ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Symbolize n random .text addresses of the ELF file at path (cold, fresh
 * symbolizer) and print ns/lookup. Returns seconds, or -1 if unavailable. */
static double bench_file(const char *path, int n, int *n_named)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    uint64_t lo = 0, hi = 0;
    size_t shstr;
    if (e && gelf_getehdr(e, &eh) && elf_getshdrstrndx(e, &shstr) == 0) {
        Elf_Scn *scn = NULL;
        while ((scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            const char *nm;
            if (gelf_getshdr(scn, &sh) && (nm = elf_strptr(e, shstr, sh.sh_name)) &&
                strcmp(nm, ".text") == 0) {
                lo = sh.sh_addr;
                hi = sh.sh_addr + sh.sh_size;
            }
        }
    }
    int is_exec = e && eh.e_type == ET_EXEC;
    if (e)
        elf_end(e);
    close(fd);
    if (hi <= lo)
        return -1;
    uint64_t bias = is_exec ? 0 : 0x7f0000000000ULL;
    uint64_t *addrs = malloc((size_t)n * sizeof *addrs);
    assert_non_null(addrs);
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        addrs[i] = bias + lo + x % (hi - lo);
    }
    double t0 = now_s();
    hs_symbolizer *s = hs_symbolizer_new();
    assert_int_equal(hs_symbolizer_add_module(s, path, bias, bias + lo, bias + hi), 0);
    *n_named = 0;
    for (int i = 0; i < n; i++) {
        hs_frame f[MAXF];
        int k = hs_symbolizer_lookup(s, addrs[i], f, MAXF);
        *n_named += k > 0;
    }
    double t1 = now_s();
    /* warm: the same addresses again (address cache), then new addresses in
     * already indexed units */
    for (int i = 0; i < n; i++) {
        hs_frame f[MAXF];
        (void)hs_symbolizer_lookup(s, addrs[i], f, MAXF);
    }
    double t2 = now_s();
    for (int i = 0; i < n; i++) {
        hs_frame f[MAXF];
        (void)hs_symbolizer_lookup(s, addrs[i] + 1, f, MAXF);
    }
    double t3 = now_s();
    hs_symbolizer_free(s);
    free(addrs);
    fprintf(stderr,
            "symbolize bench: %-42s %d addrs, %d named: cold %.0f ns/lookup (%.3f s), "
            "cached %.0f ns, new addrs in indexed units %.0f ns\n",
            path, n, *n_named, (t1 - t0) * 1e9 / n, t1 - t0, (t2 - t1) * 1e9 / n,
            (t3 - t2) * 1e9 / n);
    return t1 - t0;
}

static void test_many_lookups(void **state)
{
    (void)state;
    const char *files[] = {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/cmake",
                           "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        int named = 0;
        double t = bench_file(files[i], 10000, &named);
        if (t < 0)
            continue;
        /* libc: full symbols from libc6-dbg; the others are stripped. The
         * timing is printed for information only: timed assertions belong
         * in `make bench`, not in the tests of a shared, noisy machine. */
        if (i == 0)
            assert_true(named > 9000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inline_pie),
        cmocka_unit_test(test_inline_nopie),
        cmocka_unit_test(test_stripped_dynsym),
        cmocka_unit_test(test_stripped_debuglink),
        cmocka_unit_test(test_add_mapping),
        cmocka_unit_test(test_cxx_demangle),
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_libc_debug_file),
        cmocka_unit_test(test_vdso_image),
        cmocka_unit_test(test_bogus_and_broken),
        cmocka_unit_test(test_many_modules_fds),
        cmocka_unit_test(test_symbolize_profile),
        cmocka_unit_test(test_many_lookups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
