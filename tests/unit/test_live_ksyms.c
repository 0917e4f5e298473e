/* test_live_ksyms.c — src/live: kernel symbols (ksyms.c) read in full and
 * lazily with the per-boot cache of the core kernel's symbols (used only
 * for the boot and kallsyms it was written from, never for addresses
 * hidden by kptr_restrict, never for modules; on the running kernel the
 * same names as the full read), and the cgroup label
 * parsed from /proc/PID/cgroup texts of cgroup v1, v2 and hybrid hosts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "live/ksyms.h"
#include "live/live_int.h"

static char dir[] = "/tmp/hs-ksyms-XXXXXX";
static char ksyms_path[256], boot_path[256], cache_path[256];

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A kallsyms of FIRST (the first text symbol's address), with foo named
 * FOO and the module's function MOD. */
static void kallsyms(const char *first, const char *foo, const char *mod)
{
    char text[1024];
    snprintf(text, sizeof text,
             "0000000000000000 A fixed_percpu_data\n"
             "%s T _stext\n"
             "ffffffff81000100 t %s\n"
             "ffffffff81000200 T bar\n"
             "ffffffff81000280 d some_data\n"
             "ffffffff81000300 W weak_fn\n"
             "ffffffffc0001000 t %s\t[mymod]\n"
             "ffffffffc0002000 t bpf_prog_1234_x\t[bpf]\n",
             first, foo, mod);
    put(ksyms_path, text);
}

static void lookups_are(hs_ksyms *k, const char *foo, const char *mod)
{
    assert_string_equal(hs_ksyms_lookup(k, 0xffffffff81000150ULL), foo);
    assert_string_equal(hs_ksyms_lookup(k, 0xffffffff81000200ULL), "bar");
    assert_string_equal(hs_ksyms_lookup(k, 0xffffffff81000290ULL), "bar"); /* data is not text */
    assert_string_equal(hs_ksyms_lookup(k, 0xffffffff81000310ULL), "weak_fn");
    assert_string_equal(hs_ksyms_lookup(k, 0xffffffffc0001010ULL), mod);
    assert_null(hs_ksyms_lookup(k, 0x1000));
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(ksyms_path, sizeof ksyms_path, "%s/kallsyms", dir);
    snprintf(boot_path, sizeof boot_path, "%s/boot_id", dir);
    snprintf(cache_path, sizeof cache_path, "%s/cache/hotspur/kallsyms", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_load(void **state)
{
    (void)state;
    kallsyms("ffffffff81000000", "foo", "modfn");
    hs_ksyms *k = hs_ksyms_load(ksyms_path);
    assert_non_null(k);
    lookups_are(k, "foo", "modfn");
    hs_ksyms_free(k);
    put(ksyms_path, "0000000000000000 T _stext\n0000000000000000 t foo\n");
    assert_null(hs_ksyms_load(ksyms_path)); /* kptr_restrict: all zero */
}

/* A lazy table over the files as they are now: lookups name foo and the
 * module's function as said. */
static void lazy_names(const char *foo, const char *mod)
{
    hs_ksyms *k = hs_ksyms_lazy(ksyms_path, cache_path, boot_path);
    assert_non_null(k);
    lookups_are(k, foo, mod);
    hs_ksyms_free(k);
}

static void test_lazy_cache(void **state)
{
    (void)state;
    unlink(cache_path);
    put(boot_path, "11111111-2222-3333-4444-555555555555\n");
    kallsyms("ffffffff81000000", "foo", "modfn");
    hs_ksyms *k = hs_ksyms_lazy(ksyms_path, cache_path, boot_path);
    struct stat st;
    assert_int_not_equal(stat(cache_path, &st), 0); /* nothing read before a lookup */
    lookups_are(k, "foo", "modfn");
    hs_ksyms_free(k);
    assert_int_equal(stat(cache_path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    /* Same boot, same first symbol: the core kernel's names come from the
     * cache (foo, not foo2), a module's from kallsyms (they change). */
    kallsyms("ffffffff81000000", "foo2", "modfn2");
    lazy_names("foo", "modfn2");

    /* Another boot: read again (and the cache rewritten). */
    put(boot_path, "99999999-2222-3333-4444-555555555555\n");
    lazy_names("foo2", "modfn2");
    kallsyms("ffffffff81000000", "foo3", "modfn3");
    lazy_names("foo2", "modfn3");

    /* The first symbol moved (another kernel, KASLR): not trusted. */
    kallsyms("ffffffff80fff000", "foo4", "modfn4");
    lazy_names("foo4", "modfn4");

    /* Addresses now hidden from this user: no names at all, not the
     * cache's. */
    put(ksyms_path, "0000000000000000 T _stext\n0000000000000000 t foo\n");
    k = hs_ksyms_lazy(ksyms_path, cache_path, boot_path);
    assert_null(hs_ksyms_lookup(k, 0xffffffff81000150ULL));
    hs_ksyms_free(k);

    /* A truncated or foreign cache file is not used. */
    kallsyms("ffffffff81000000", "foo5", "modfn5");
    lazy_names("foo5", "modfn5"); /* writes the cache */
    assert_int_equal(truncate(cache_path, 200), 0);
    kallsyms("ffffffff81000000", "foo6", "modfn6");
    lazy_names("foo6", "modfn6");
    assert_int_equal(chmod(cache_path, 0644), 0); /* not private: not trusted */
    kallsyms("ffffffff81000000", "foo7", "modfn7");
    lazy_names("foo7", "modfn7");

    /* No cache: read in full every time. */
    k = hs_ksyms_lazy(ksyms_path, NULL, boot_path);
    lookups_are(k, "foo7", "modfn7");
    hs_ksyms_free(k);
}

/* On the running kernel (when its addresses are visible: root): the
 * cached table names every text symbol's address, and the byte after it,
 * as the full read of /proc/kallsyms does. */
static void test_live_kernel(void **state)
{
    (void)state;
    hs_ksyms *full = hs_ksyms_load(NULL);
    if (!full) {
        skip();
        return;
    }
    char cache[300];
    snprintf(cache, sizeof cache, "%s/live-cache", dir);
    hs_ksyms *warm = hs_ksyms_lazy(NULL, cache, NULL);
    assert_non_null(hs_ksyms_lookup(warm, 0xffffffffffffffffULL)); /* reads, writes the cache */
    hs_ksyms_free(warm);
    struct stat st;
    assert_int_equal(stat(cache, &st), 0);
    hs_ksyms *cached = hs_ksyms_lazy(NULL, cache, NULL);
    FILE *f = fopen("/proc/kallsyms", "r");
    assert_non_null(f);
    char line[512];
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        char type, name[256];
        unsigned long long a;
        if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 || strchr(line, '\t') || !a ||
            !strchr("tTwW", type))
            continue;
        for (uint64_t d = 0; d < 2; d++) {
            const char *x = hs_ksyms_lookup(full, a + d), *y = hs_ksyms_lookup(cached, a + d);
            assert_non_null(x);
            assert_non_null(y);
            if (strcmp(x, y) != 0)
                fail_msg("0x%llx: %s in full, %s cached", a + d, x, y);
        }
        n++;
    }
    fclose(f);
    assert_true(n > 1000);
    hs_ksyms_free(cached);
    hs_ksyms_free(full);
}

static void test_cache_path(void **state)
{
    (void)state;
    char buf[512];
    setenv("HOTSPUR_KSYMS_CACHE", "", 1);
    assert_null(hs_ksyms_cache_path(buf, sizeof buf));
    setenv("HOTSPUR_KSYMS_CACHE", "/x/y", 1);
    assert_string_equal(hs_ksyms_cache_path(buf, sizeof buf), "/x/y");
    unsetenv("HOTSPUR_KSYMS_CACHE");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    assert_string_equal(hs_ksyms_cache_path(buf, sizeof buf), "/xdg/hotspur/kallsyms");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    assert_string_equal(hs_ksyms_cache_path(buf, sizeof buf), "/home/u/.cache/hotspur/kallsyms");
}

static void cgroup_is(const char *text, const char *want)
{
    char out[256];
    lv_cgroup_path(text, out, sizeof out);
    assert_string_equal(out, want);
}

static void test_cgroup(void **state)
{
    (void)state;
    /* v2 */
    cgroup_is("0::/system.slice/redis-server.service\n", "/system.slice/redis-server.service");
    cgroup_is("0::/\n", "/");
    /* v1 (Debian 10, Ubuntu 18.04): the first lines are controllers that
     * say "/" for everyone; name=systemd says the unit */
    cgroup_is("12:rdma:/\n"
              "11:hugetlb:/\n"
              "10:cpuset:/\n"
              "9:pids:/system.slice/redis-server.service\n"
              "8:memory:/system.slice/redis-server.service\n"
              "2:cpu,cpuacct:/system.slice/redis-server.service\n"
              "1:name=systemd:/system.slice/redis-server.service\n",
              "/system.slice/redis-server.service");
    /* v1 docker (cgroupfs driver): every controller says the container */
    cgroup_is("11:rdma:/\n"
              "10:memory:/docker/4f1c2b\n"
              "1:name=systemd:/docker/4f1c2b\n",
              "/docker/4f1c2b");
    /* v1 without name=systemd: the first path that is not the root */
    cgroup_is("3:cpuset:/\n2:memory:/batch/job7\n1:cpu:/batch/job7\n", "/batch/job7");
    cgroup_is("3:cpuset:/\n2:memory:/\n", "/");
    /* hybrid: the v2 line first */
    cgroup_is("5:memory:/user.slice\n1:name=systemd:/user.slice/session-2.scope\n0::/user.slice/session-2.scope\n",
              "/user.slice/session-2.scope");
    /* hybrid, nothing under v2 (the unified tree unused): systemd's */
    cgroup_is("1:name=systemd:/system.slice/cron.service\n0::/\n", "/system.slice/cron.service");
    /* a path holding ':' (the third field is the rest of the line) */
    cgroup_is("4:memory:/kubepods/pod1/cri-containerd:abc\n", "/kubepods/pod1/cri-containerd:abc");
    cgroup_is("0::/a:b::c\n", "/a:b::c");
    /* no newline at the end, junk, empty */
    cgroup_is("1:name=systemd:/x.service", "/x.service");
    cgroup_is("garbage\n", "");
    cgroup_is("", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_lazy_cache),
        cmocka_unit_test(test_live_kernel),
        cmocka_unit_test(test_cache_path),
        cmocka_unit_test(test_cgroup),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
