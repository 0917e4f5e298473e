/* test_assets.c — the web UI's files embedded in the binary (assets.c and
 * embed.cmake's DIR mode): "/" is index.html, each file of web/ is served
 * byte for byte with its content type, a query string is not part of the
 * name, and anything else (other paths, "..") is not found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/server.h"

/* The file web/NAME from the source tree, malloc'd, its size in *len. */
static char *read_web(const char *name, size_t *len)
{
    const char *src = getenv("HS_SOURCE_DIR");
    assert_non_null(src);
    char path[4096];
    snprintf(path, sizeof path, "%s/web/%s", src, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void check_file(const char *url, const char *name, const char *type)
{
    size_t len = 0, want_len = 0;
    const char *ctype = NULL;
    const void *data = hs_asset_get(url, &len, &ctype);
    assert_non_null(data);
    assert_string_equal(ctype, type);
    char *want = read_web(name, &want_len);
    assert_int_equal(len, want_len);
    assert_memory_equal(data, want, len);
    free(want);
}

static void test_files(void **state)
{
    (void)state;
    check_file("/", "index.html", "text/html; charset=utf-8");
    check_file("/index.html", "index.html", "text/html; charset=utf-8");
    check_file("/app.js", "app.js", "text/javascript; charset=utf-8");
    check_file("/flamegraph.js", "flamegraph.js", "text/javascript; charset=utf-8");
    check_file("/style.css", "style.css", "text/css; charset=utf-8");
    check_file("/?service=a&type=cpu", "index.html", "text/html; charset=utf-8");
    check_file("/app.js?v=1", "app.js", "text/javascript; charset=utf-8");
}

static void test_not_found(void **state)
{
    (void)state;
    size_t len = 7;
    const char *ctype = NULL;
    const char *bad[] = {"", "/nope.js", "/../web/app.js", "app.js", "/app.js/", "/web/app.js", "//app.js",
                         "/APP.JS", "/app.j"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_null(hs_asset_get(bad[i], &len, &ctype));
    assert_null(hs_asset_get(NULL, &len, &ctype));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_not_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
