/* filename.c — how a profile's file is named when one run writes several:
 * the rule shared by the agent (which writes them) and `hotspur record`
 * (which reports them); and how a mapping's build-id is spelt. */
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
