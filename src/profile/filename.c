/* filename.c — how a profile's file is named when one run writes several:
 * the rule shared by the agent (which writes them) and `hotspur record`
 * (which reports them); how a mapping's build-id is spelt; numbers in decimal. */
#include <stdio.h>
#include <string.h>

#include "profile/profile.h"

int hs_profile_file_name(const char *base, const char *type, int several, const char *companion,
                         char *out, size_t outlen)
{
    static const char suffix[] = ".pb.gz";
    size_t n = strlen(base), k = sizeof suffix - 1;
    size_t stem = n >= k && strcmp(base + n - k, suffix) == 0 ? n - k : n;
    int w = snprintf(out, outlen, "%.*s%s%s%s%s%s", (int)stem, base, several ? "." : "",
                     several ? type : "", companion ? "." : "", companion ? companion : "", base + stem);
    return w < 0 || (size_t)w >= outlen ? -1 : 0;
}

void hs_hex(const unsigned char *bits, size_t len, char *out, size_t outlen)
{
    static const char digits[] = "0123456789abcdef";
    size_t j = 0;
    for (size_t i = 0; i < len && j + 2 < outlen; i++) {
        out[j++] = digits[bits[i] >> 4];
        out[j++] = digits[bits[i] & 15];
    }
    out[j] = '\0';
}

size_t hs_int_dec(char *out, int64_t v)
{
    static const char d2[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";
    static const uint64_t pow10[20] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL,
                                       10000000ULL, 100000000ULL, 1000000000ULL, 10000000000ULL,
                                       100000000000ULL, 1000000000000ULL, 10000000000000ULL,
                                       100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
                                       100000000000000000ULL, 1000000000000000000ULL,
                                       10000000000000000000ULL};
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, u1 = u | 1;
    /* digits: t ~ log10 from the bit length (1233 / 4096 ~ log10 2), one
     * less when below 10^t; then the sign */
    unsigned t = ((unsigned)(64 - __builtin_clzll(u1)) * 1233) >> 12;
    size_t k = t + 1 - (u1 < pow10[t]) + (v < 0);
    char *p = out + k; /* written from the last digit back */
    while (u >= 100) { /* two digits at a time */
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        p -= 2;
        memcpy(p, d2 + 2 * r, 2);
    }
    if (u >= 10) {
        p -= 2;
        memcpy(p, d2 + 2 * u, 2);
    } else {
        *--p = (char)('0' + u);
    }
    if (v < 0)
        *--p = '-';
    return k;
}
