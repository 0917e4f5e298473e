/* test_base_fs.c — base/fs.h: hs_mkdirs (mkdir -p) creates every missing
 * parent with the mode asked, accepts what exists, and says which
 * directory it could not create; hs_write_all writes everything. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fs.h"

static void test_mkdirs(void **state)
{
    (void)state;
    char root[] = "/tmp/hs-fs-XXXXXX";
    assert_non_null(mkdtemp(root));
    char p[512], where[512];
    snprintf(p, sizeof p, "%s/a/b/c", root);
    assert_int_equal(hs_mkdirs(p, 0700, where, sizeof where), 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(hs_mkdirs(p, 0700, NULL, 0), 0); /* again: exists */
    snprintf(p, sizeof p, "%s/a/b/", root);          /* a trailing slash */
    assert_int_equal(hs_mkdirs(p, 0700, NULL, 0), 0);
    /* a file in the way: fails there, and says where */
    snprintf(p, sizeof p, "%s/f", root);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(p, sizeof p, "%s/f/x/y", root);
    assert_int_equal(hs_mkdirs(p, 0700, where, sizeof where), -1);
    assert_int_equal(errno, ENOTDIR);
    snprintf(p, sizeof p, "%s/f/x", root);
    assert_string_equal(where, p);
    /* too long, empty */
    char *longp = malloc(5000);
    assert_non_null(longp);
    memset(longp, 'a', 4999);
    longp[0] = '/';
    longp[4999] = 0;
    assert_int_equal(hs_mkdirs(longp, 0700, NULL, 0), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    free(longp);
    assert_int_equal(hs_mkdirs("", 0700, NULL, 0), -1);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* hs_write_all: 1 MiB written in full, 0 bytes fine, a closed fd an error. */
static void test_write_all(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/hs-fs-write-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    size_t n = 1 << 20;
    char *buf = malloc(n);
    assert_non_null(buf);
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(i * 7);
    assert_int_equal(hs_write_all(fd, buf, n), 0);
    assert_int_equal(hs_write_all(fd, buf, 0), 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, (off_t)n);
    char *back = malloc(n);
    assert_non_null(back);
    assert_int_equal(pread(fd, back, n, 0), (ssize_t)n);
    assert_memory_equal(back, buf, n);
    close(fd);
    unlink(tmpl);
    assert_int_equal(hs_write_all(fd, buf, 1), -1); /* closed */
    assert_int_equal(errno, EBADF);
    free(back);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mkdirs),
        cmocka_unit_test(test_write_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
