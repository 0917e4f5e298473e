/* symlib.h — the agent's in-process symbolizer, a second shared object.
 *
 * The symbolizer (symbolize/, with elfutils, libstdc++'s demangler and
 * libiberty) is not linked into libhotspur.so: the loader would map and
 * relocate those libraries in every process started with the agent, and
 * most of them never symbolize (under `hotspur record` the program's files
 * are symbolized by record). It lives in libhotspur-symbolize.so, installed
 * beside libhotspur.so, which the agent dlopens the first time a profile is
 * to be symbolized in the process — or early, on the agent thread, when
 * every profile will be (see hs_symlib_preload) — never in a signal
 * handler. Both objects come from one build: the companion hands over a
 * table of its functions, checked against the agent's version and its
 * profile model's size.
 */
#ifndef HS_AGENT_SYMLIB_H
#define HS_AGENT_SYMLIB_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

#define HS_SYMLIB_NAME "libhotspur-symbolize.so"
#define HS_SYMLIB_ENTRY "hs_symlib_entry" /* the companion's one exported symbol */

typedef struct hs_symbolizer hs_symbolizer;

/* The symbolizer's functions the agent uses (see symbolize/symbolize.h). */
typedef struct {
    const char *version;  /* HS_AGENT_VERSION of the companion's build */
    size_t profile_size;  /* sizeof(hs_profile) there: the same model */
    size_t table_size;    /* sizeof(hs_symlib) there */
    hs_symbolizer *(*create)(void);
    void (*destroy)(hs_symbolizer *s);
    int (*add_module)(hs_symbolizer *s, const char *path, uint64_t bias, uint64_t start, uint64_t end);
    int (*add_image)(hs_symbolizer *s, const char *name, const void *image, size_t size, uint64_t bias,
                     uint64_t start, uint64_t end);
    int (*symbolize_profile)(hs_symbolizer *s, hs_profile *p);
} hs_symlib;

/* The symbolizer, loaded on first use (not in a signal handler: it may
 * dlopen). NULL when it cannot be loaded: the reason is printed on stderr
 * once, and profiles are written with addresses only. */
const hs_symlib *hs_symlib_get(void);

/* Load it now if profiles will be symbolized in this process (not under
 * `hotspur record`'s deferred symbols, or uploads): on the agent thread as
 * it starts, or at start when there is no agent thread, so a write caused
 * by a signal or a crash finds it loaded. */
void hs_symlib_preload(void);

#endif
