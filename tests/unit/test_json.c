/* test_json.c — the one JSON string escaper (base/json.h): quotes,
 * backslashes and control bytes escaped, '<' '>' '&' as \u escapes, valid
 * UTF-8 kept, invalid bytes as U+FFFD; hs_json_escape_into never cuts an
 * escape, so a truncated string is still valid JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"

static char *quoted(const char *s)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    hs_json_fput_string(f, s);
    assert_int_equal(fclose(f), 0);
    return out;
}

static void test_escapes(void **state)
{
    (void)state;
    const struct {
        const char *in, *want;
    } cases[] = {
        {"", "\"\""},
        {"plain text", "\"plain text\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"line\nfeed\ttab\rcr", "\"line\\nfeed\\ttab\\rcr\""},
        {"\x01\x1f", "\"\\u0001\\u001f\""},
        {"<script>&", "\"\\u003cscript\\u003e\\u0026\""},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5\""},
        {"bad \xff byte", "\"bad \\ufffd byte\""},
        {"overlong \xc0\xaf", "\"overlong \\ufffd\\ufffd\""},
        {"surrogate \xed\xa0\x80", "\"surrogate \\ufffd\\ufffd\\ufffd\""},
        {"cut \xe2\x82", "\"cut \\ufffd\\ufffd\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = quoted(cases[i].in);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu: got %s, want %s", i, got, cases[i].want);
        free(got);
    }
}

static void test_escape_into_never_cuts(void **state)
{
    (void)state;
    char b[64];
    /* room for '{"e":"' + 6 bytes + quote + NUL: "ab" fits, then the
     * six-byte \u003c does not and nothing after it is written */
    size_t n = (size_t)snprintf(b, sizeof b, "{\"e\":\"");
    size_t end = hs_json_escape_into(b, n + 6 + 2, n, "ab<cd");
    assert_int_equal(end, n + 2);
    memcpy(b + end, "\"", 2);
    assert_string_equal(b, "{\"e\":\"ab\"");
    /* with room, everything, no quotes of its own */
    end = hs_json_escape_into(b, sizeof b, n, "x\"<y");
    b[end] = 0;
    assert_string_equal(b + n, "x\\\"\\u003cy");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_escape_into_never_cuts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
