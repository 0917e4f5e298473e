/* test_tenant.c — tenant.c's pure parts: which names are tenants, where a
 * tenant's store lives (one name, one SQLite directory or ClickHouse
 * database, never two names the same), the --tokens file's grammar and its
 * lookup, and a tenant's store being its own (profiles of one not seen by
 * another on one hs_tenants). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/server.h"

static void test_names(void **state)
{
    (void)state;
    const char *good[] = {"acme", "a", "Acme-EU_1.prod", "default"};
    const char *bad[] = {"", ".", "..", "a/b", "a b", "a|b", "é", "x\n"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(hs_tenant_name_ok(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(hs_tenant_name_ok(bad[i]));
    char l[HS_TENANT_NAME_MAX + 2];
    memset(l, 'x', sizeof l);
    l[HS_TENANT_NAME_MAX] = 0;
    assert_true(hs_tenant_name_ok(l));
    l[HS_TENANT_NAME_MAX] = 'x';
    l[HS_TENANT_NAME_MAX + 1] = 0;
    assert_false(hs_tenant_name_ok(l));
    assert_false(hs_tenant_name_ok(NULL));
}

static void test_store_url(void **state)
{
    (void)state;
    char u[512];
    assert_int_equal(hs_tenant_store_url("/d", "acme", u, sizeof u), 0);
    assert_string_equal(u, "sqlite:/d/tenants/acme");
    assert_int_equal(hs_tenant_store_url("sqlite:/d", "acme", u, sizeof u), 0);
    assert_string_equal(u, "sqlite:/d/tenants/acme");
    assert_int_equal(hs_tenant_store_url("clickhouse://h:8123/hs", "acme.eu", u, sizeof u), 0);
    assert_string_equal(u, "clickhouse://h:8123/hs_t_acme_2eeu");
    assert_int_equal(hs_tenant_store_url("clickhouse://u:p@h:1,g:2/hs?cluster=c&timeout=5", "a_b-c", u, sizeof u), 0);
    assert_string_equal(u, "clickhouse://u:p@h:1,g:2/hs_t_a_5fb_2dc?cluster=c&timeout=5");
    /* one name, one database: names that differ only in the escaped
     * characters stay apart */
    char v[512];
    hs_tenant_store_url("clickhouse://h:1/hs", "a_2e", u, sizeof u);
    hs_tenant_store_url("clickhouse://h:1/hs", "a.", v, sizeof v);
    assert_string_not_equal(u, v);
    assert_int_equal(hs_tenant_store_url("/d", "acme", u, 10), -1);
}

static char *write_file(const char *text)
{
    static char path[] = "/tmp/hs-tokens-XXXXXX";
    strcpy(path, "/tmp/hs-tokens-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_tokens(void **state)
{
    (void)state;
    char err[256];
    char *p = write_file("# comment\n\ntokA acme\n  tokB\tbeta # who\ntokD default\n");
    hs_tokens *m = hs_tokens_load(p, err, sizeof err);
    unlink(p);
    assert_non_null(m);
    assert_int_equal(hs_tokens_count(m), 3);
    assert_string_equal(hs_tokens_tenant(m, "tokA"), "acme");
    assert_string_equal(hs_tokens_tenant(m, "tokB"), "beta");
    assert_string_equal(hs_tokens_tenant(m, "tokD"), "default");
    assert_null(hs_tokens_tenant(m, "tok"));
    assert_null(hs_tokens_tenant(m, "tokAA"));
    assert_null(hs_tokens_tenant(m, ""));
    hs_tokens_free(m);
    const char *bad[] = {"tokA\n", "tokA acme extra\n", "tokA ../x\n", "tokA acme\ntokA beta\n", "# only\n", ""};
    const char *why[] = {"want 'TOKEN TENANT'", "want 'TOKEN TENANT'", "want 'TOKEN TENANT'", "listed twice",
                         "no 'TOKEN TENANT'", "no 'TOKEN TENANT'"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        p = write_file(bad[i]);
        err[0] = 0;
        m = hs_tokens_load(p, err, sizeof err);
        unlink(p);
        assert_null(m);
        if (!strstr(err, why[i]))
            fail_msg("'%s': %s (want %s)", bad[i], err, why[i]);
    }
    assert_null(hs_tokens_load("/nonexistent/tokens", err, sizeof err));
}

/* Two tenants of one SQLite directory: a profile one stores is not in the
 * other's store, and the default tenant's store is the directory itself. */
static void test_stores_apart(void **state)
{
    (void)state;
    char dir[] = "/tmp/hs-tenants-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char err[256];
    hs_tenants_config cfg = {.store_url = dir};
    hs_tenants *ts = hs_tenants_new(&cfg, err, sizeof err);
    assert_non_null(ts);
    hs_tenant *a = NULL, *b = NULL, *d = NULL;
    assert_int_equal(hs_tenants_get(ts, "acme", &a, err, sizeof err), 0);
    assert_int_equal(hs_tenants_get(ts, "beta", &b, err, sizeof err), 0);
    assert_int_equal(hs_tenants_get(ts, NULL, &d, err, sizeof err), 0);
    hs_tenant *d2 = NULL, *a2 = NULL;
    assert_int_equal(hs_tenants_get(ts, "default", &d2, err, sizeof err), 0);
    assert_int_equal(hs_tenants_get(ts, "acme", &a2, err, sizeof err), 0);
    assert_ptr_equal(d, hs_tenants_default(ts));
    assert_ptr_equal(d2, d);
    assert_ptr_equal(a2, a);
    assert_ptr_not_equal(a->store, b->store);
    assert_ptr_not_equal(a->store, d->store);
    assert_int_equal(hs_tenants_get(ts, "a/b", &a2, err, sizeof err), -1);
    static const char rec[] = "x";
    hs_store_stack st = {.hash = 42, .data = rec, .len = 1};
    hs_store_sample sm = {.stack = 42, .values = {1}};
    hs_store_profile p = {.id = "p1", .service = "shop", .type = "cpu", .version = "", .start_ns = 1000,
                          .duration_ns = 10, .types = {.n = 1, .type = {"samples"}, .unit = {"count"}},
                          .totals = {1}, .samples = &sm, .n_samples = 1, .stacks = &st, .n_stacks = 1};
    const hs_store_profile *pp = &p;
    size_t dups = 0;
    if (hs_store_put(a->store, &pp, 1, &dups, err, sizeof err) != 0)
        fail_msg("put: %s", err);
    hs_store_stats sa, sb, sd;
    assert_int_equal(hs_store_stats_get(a->store, &sa, err, sizeof err), 0);
    assert_int_equal(hs_store_stats_get(b->store, &sb, err, sizeof err), 0);
    assert_int_equal(hs_store_stats_get(d->store, &sd, err, sizeof err), 0);
    assert_int_equal(sa.profiles, 1);
    assert_int_equal(sb.profiles, 0);
    assert_int_equal(sd.profiles, 0);
    hs_tenants_free(ts);
    char path[256];
    snprintf(path, sizeof path, "%s/tenants/acme/hotspur.db", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/hotspur.db", dir);
    assert_int_equal(access(path, F_OK), 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_store_url),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_stores_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
