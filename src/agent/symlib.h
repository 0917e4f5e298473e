/* symlib.h — the agent's in-process symbolizer, a second shared object.
 *
 * The symbolizer (symbolize/, with elfutils, libstdc++'s demangler and
 * libiberty) is not linked into libhotspur.so: the loader would map and
 * relocate those libraries in every process started with the agent, and
 * most of them never symbolize (under `hotspur record` the program's files
 * are symbolized by record). It lives in libhotspur-symbolize.so, installed
 * beside libhotspur.so, which the agent dlopens as it starts when every
 * profile will be symbolized in the process (see hs_symlib_preload), else
 * the first time one is (`hotspur ctl PID dump` under record, on the agent
 * thread) — never in a signal handler. Both objects come from one build: the companion hands over a
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
 * `hotspur record`'s deferred symbols, or uploads): called as the agent
 * starts, before the program runs, so that neither a write caused by a
 * signal or a crash nor the program's fork meets a load under way (a
 * fork during another thread's dlopen leaves the child a half-loaded
 * library, and glibc's loader locks held). */
void hs_symlib_preload(void);

#endif
