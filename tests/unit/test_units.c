/* test_units.c — the one duration and size grammar (base/units.h): every
 * unit, fractions, bare seconds, the forms that must be refused (sign,
 * exponent, space, unknown unit, overflow), and sizes in binary multiples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/units.h"

static int64_t dur(const char *s)
{
    int64_t ns = -12345;
    if (hs_parse_duration_ns(s, &ns) < 0) {
        assert_int_equal(ns, -12345); /* nothing written on error */
        return -1;
    }
    return ns;
}

static void test_duration_units(void **state)
{
    (void)state;
    const int64_t S = 1000000000;
    assert_int_equal(dur("250ns"), 250);
    assert_int_equal(dur("500us"), 500000);
    assert_int_equal(dur("500ms"), 500000000);
    assert_int_equal(dur("10s"), 10 * S);
    assert_int_equal(dur("90"), 90 * S); /* bare: seconds */
    assert_int_equal(dur("2m"), 120 * S);
    assert_int_equal(dur("36h"), 36 * 3600 * S);
    assert_int_equal(dur("1d"), 86400 * S);
    assert_int_equal(dur("1w"), 7 * 86400 * S);
    assert_int_equal(dur("0"), 0);
    assert_int_equal(dur("1.5h"), 5400 * S);
    assert_int_equal(dur("0.1"), S / 10);
    assert_int_equal(dur("0.25s"), S / 4);
    assert_int_equal(dur("36500d"), (int64_t)36500 * 86400 * S); /* 100 years of 365 days fits */
}

static void test_duration_refused(void **state)
{
    (void)state;
    const char *bad[] = {"",     "s",     "-1s",   "+1s",    "1e3",  "1 s",   " 1s", "1s ", "1.s",
                         ".5s",  "1x",    "1ss",   "1S",     "inf",  "nan",   "0x10", "1y",  "1mo",
                         "100000000000000000000", "36700d", "1,5h"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (dur(bad[i]) != -1)
            fail_msg("'%s' was accepted as a duration", bad[i]);
    }
    assert_int_equal(hs_parse_duration_ns(NULL, &(int64_t){0}), -1);
}

static int64_t size(const char *s)
{
    uint64_t b = 777;
    if (hs_parse_size(s, &b) < 0) {
        assert_int_equal(b, 777);
        return -1;
    }
    return (int64_t)b;
}

static void test_sizes(void **state)
{
    (void)state;
    assert_int_equal(size("1048576"), 1048576);
    assert_int_equal(size("16m"), 16 << 20);
    assert_int_equal(size("16M"), 16 << 20);
    assert_int_equal(size("512k"), 512 << 10);
    assert_int_equal(size("512KiB"), 512 << 10);
    assert_int_equal(size("512kb"), 512 << 10);
    assert_int_equal(size("1g"), 1 << 30);
    assert_int_equal(size("2t"), (int64_t)2 << 40);
    assert_int_equal(size("0"), 0);
    const char *bad[] = {"", "k", "-1", "1.5m", "16mm", "16 m", "16x", "1b", "16777216t", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (size(bad[i]) != -1)
            fail_msg("'%s' was accepted as a size", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_units),
        cmocka_unit_test(test_duration_refused),
        cmocka_unit_test(test_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
