/* names.h — naming frames at the server (issue 31): profiles sent with
 * addresses (HOTSPUR_SYMBOLIZE=server, the host agent) get their function,
 * file, line and inline chain from debug info found by build ID, with the
 * same symbolizer `hotspur record` uses (symbolize/), so a stored profile
 * reads as `record` would have written it.
 *
 * Where debug info comes from, in the configured order (docs/debuginfo.md):
 *   upload      files uploaded to the server (PUT /api/v1/debuginfo/ID,
 *               `hotspur debuginfo upload`), kept as DIR/xx/rest.debug;
 *   build-id    local build-ID directories (DIR/.build-id/xx/rest.debug,
 *               default /usr/lib/debug);
 *   path        the binary at the mapping's path on the server's host, used
 *               only when its build ID is the mapping's;
 *   debuginfod  debuginfod servers (libdebuginfod), fetched on a thread of
 *               its own so no ingest or query waits on the network; a failed
 *               lookup is remembered for negative_ttl_s.
 *
 * When: at ingest, frames whose debug info is at hand are named before the
 * profile is stored (queries then cost nothing extra); the others are
 * stored as "BASENAME+0xOFF" with their build ID and offset kept
 * (store/stack.h, HS_STACK_UNNAMED_PREFIX) and named at query time once
 * their debug info arrives (hs_names_record), so an upload after the fact
 * names the history. Answers are cached per (build ID, address), bounded,
 * and kept on disk beside the uploads when there is a directory for them.
 * Thread-safe. */
#ifndef HS_SERVER_NAMES_H
#define HS_SERVER_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

typedef struct hs_names hs_names;

typedef struct {
    const char *dir;                 /* uploads and the answer cache (NULL: no uploads, cache in memory) */
    const char *const *debug_dirs;   /* build-ID directories' roots (NULL: {"/usr/lib/debug"}) */
    size_t n_debug_dirs;
    const char *debuginfod_urls;     /* space-separated URLs (NULL: $DEBUGINFOD_URLS; "": none) */
    int debuginfod_timeout_s;        /* per lookup (0: 10) */
    int negative_ttl_s;              /* a failed debuginfod lookup is not retried for this long (0: 300) */
    const char *order;               /* comma-separated sources (NULL: "upload,build-id,path,debuginfod") */
    size_t max_cached;               /* answers kept in memory and on disk (0: 1 000 000) */
} hs_names_config;

hs_names *hs_names_new(const hs_names_config *cfg, char *err, size_t errlen);
void hs_names_free(hs_names *n);

/* Name the locations of p that have no lines and whose mapping has a build
 * ID, from the debug info at hand (debuginfod lookups are queued, not
 * awaited). Returns how many locations were named, or -1 out of memory. */
long hs_names_profile(hs_names *n, hs_profile *p);

/* Whether the profile has a location hs_names_profile would try. */
bool hs_names_wanted(const hs_profile *p);

/* A stack record with unnamed build-ID frames, renamed: 1 with *out (malloc'd
 * record, *outlen), 0 when nothing could be named (or nothing to name), -1
 * on error. */
int hs_names_record(hs_names *n, const void *rec, size_t len, void **out, size_t *outlen);

/* Changes whenever debug info arrives or goes (an upload, a removal, a
 * debuginfod fetch): records renamed before may be named differently now. */
uint64_t hs_names_generation(hs_names *n);

/* ---- uploaded debug info ---- */

/* Whether s is a build ID as the API takes it: 2..128 lowercase hex digits,
 * an even number. */
bool hs_names_build_id_ok(const char *s);

/* The directory uploads are kept in (NULL: uploads are refused). */
const char *hs_names_dir(const hs_names *n);

/* Take the file at tmp (in hs_names_dir, written by the caller) as the debug
 * info of build_id: it must be ELF, have that build ID and debug info
 * (.debug_info or .symtab). Returns 0 (tmp renamed into place), or an HTTP
 * status (400, 409, 500) with a message; tmp is removed either way. */
int hs_names_add_upload(hs_names *n, const char *build_id, const char *tmp, char *err, size_t errlen);

/* Remove an upload: 0, 404 when there is none, 500. */
int hs_names_remove_upload(hs_names *n, const char *build_id, char *err, size_t errlen);

typedef struct {
    char build_id[129];
    uint64_t size;
    int64_t mtime_s;
} hs_names_upload;

/* The uploads (malloc'd array, *count), sorted by build ID. 0, or -1. */
int hs_names_list_uploads(hs_names *n, hs_names_upload **out, size_t *count);

/* Counters for /api/v1/stats and tests. */
typedef struct {
    uint64_t named, unnamed, cache_hits, disk_hits, debuginfod_ok, debuginfod_failed;
} hs_names_stats;
void hs_names_get_stats(hs_names *n, hs_names_stats *out);

#endif
