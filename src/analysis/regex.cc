/* regex.cc — the C shim over RE2 declared in regex.h: compile with a
 * memory budget and a length limit, unanchored match, free. Nothing else
 * in hotspur includes RE2 or is written in C++ for it. */
#include "analysis/regex.h"

#include <re2/re2.h>

#include <cstdio>
#include <cstring>
#include <new>

int hs_regex_compile(hs_regex *out, const char *pattern, char *err, size_t errlen)
{
    out->re2 = nullptr;
    size_t len = strlen(pattern);
    if (len > HS_REGEX_MAX_LEN) {
        snprintf(err, errlen, "longer than %d bytes", HS_REGEX_MAX_LEN);
        return -1;
    }
    RE2::Options o;
    o.set_log_errors(false);
    o.set_max_mem(HS_REGEX_MAX_MEM);
    o.set_never_capture(true);
    RE2 *re = new (std::nothrow) RE2(re2::StringPiece(pattern, len), o);
    if (!re) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!re->ok()) {
        snprintf(err, errlen, "%s", re->error_code() == RE2::ErrorPatternTooLarge
                                        ? "pattern too large for the matcher's memory budget"
                                        : re->error().c_str());
        delete re;
        return -1;
    }
    out->re2 = re;
    return 0;
}

bool hs_regex_match(const hs_regex *re, const char *s)
{
    if (!re->re2)
        return false;
    return RE2::PartialMatch(s, *static_cast<const RE2 *>(re->re2));
}

void hs_regex_free(hs_regex *re)
{
    delete static_cast<RE2 *>(re->re2);
    re->re2 = nullptr;
}
