/* cmd_export.h — helpers shared by `flame`, `graph` and `convert`
 * (cmd_flame.c, cmd_graph.c, cmd_convert.c): load a profile in any format
 * we import, and write an output file atomically (temp file + rename) so a
 * failed run never leaves half a file behind. Static inline: each command
 * file takes what it uses. */
#ifndef HS_CLI_CMD_EXPORT_H
#define HS_CLI_CMD_EXPORT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/fetch.h"
#include "profile/otlp.h"
#include "profile/profile.h"
#include "report/export.h"

/* An OTLP profiles request (protobuf or JSON, gzipped or not) as one
 * profile: its profiles merged when it has several. */
static inline hs_profile *hs_cli_load_otlp(const hs_profile_input *in, char *err, size_t errlen)
{
    const unsigned char *data = in->data;
    size_t len = in->len;
    unsigned char *plain = NULL;
    if (len >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
        hs_gunzip_limits gl = {(size_t)1 << 34, 1000, SIZE_MAX};
        if (hs_gunzip_bounded(data, len, &gl, &plain, &len, err, errlen) != 0)
            return NULL;
        data = plain;
    }
    hs_otlp_batch b;
    int st = hs_otlp_decode(data, len, hs_otlp_is_json(data, len), 0, &b, err, errlen);
    free(plain);
    if (st)
        return NULL;
    hs_profile *p = NULL;
    if (b.n == 0) {
        snprintf(err, errlen, "the OTLP request has no profiles");
    } else if (b.n == 1) {
        p = b.p[0].profile;
        b.p[0].profile = NULL;
    } else {
        hs_profile **ps = malloc(b.n * sizeof *ps);
        if (ps) {
            for (size_t i = 0; i < b.n; i++)
                ps[i] = b.p[i].profile;
            p = hs_analysis_merge(ps, b.n, err, errlen);
            free(ps);
        } else {
            snprintf(err, errlen, "out of memory");
        }
    }
    hs_otlp_batch_free(&b);
    return p;
}

/* Load a profile: `from` is "pprof", "collapsed", "perf-script", "otlp", or NULL /
 * "auto" to detect the format from the content. PATH is a file ("-" =
 * stdin; a regular file is mapped, not copied) or a URL (fetch.h). */
static inline hs_profile *hs_cli_load(const char *path, const char *from, char *err,
                                      size_t errlen)
{
    hs_profile_input in = {NULL, 0, 0};
    if (hs_fetch_is_url(path)) {
        char *data = NULL;
        if (hs_fetch_url(path, &data, &in.len, err, errlen) != 0)
            return NULL;
        in.data = (const unsigned char *)data;
    } else if (hs_profile_input_read(path, &in, err, errlen) != 0) {
        return NULL;
    }
    if (!from || strcmp(from, "auto") == 0) {
        from = hs_import_detect((const char *)in.data, in.len);
        if (!from) {
            hs_profile_input_free(&in);
            snprintf(err, errlen, "empty input");
            return NULL;
        }
    }
    hs_profile *p = NULL;
    if (strcmp(from, "pprof") == 0)
        return hs_profile_decode_input(&in, err, errlen); /* released once inflated */
    if (strcmp(from, "collapsed") == 0)
        p = hs_import_collapsed((const char *)in.data, in.len, err, errlen);
    else if (strcmp(from, "perf-script") == 0)
        p = hs_import_perf_script((const char *)in.data, in.len, err, errlen);
    else if (strcmp(from, "otlp") == 0)
        p = hs_cli_load_otlp(&in, err, errlen);
    else
        snprintf(err, errlen, "unknown input format '%s' (pprof, collapsed, perf-script, otlp)", from);
    hs_profile_input_free(&in);
    return p;
}

/* An output being written: path "-" is stdout. A regular file is written
 * to a temporary file renamed into place; anything else (a device, a FIFO)
 * in place. */
typedef struct {
    FILE *f;
    const char *path;
    char tmp[4096];
} hs_cli_out;

/* Whether path can be an output file: not a directory, in a directory that
 * exists. 0, or -1 with a message (callers exit 2: a usage error). */
static inline int hs_cli_check_output(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: is a directory", path);
        return -1;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%.*s: no such directory", (int)(slash - dir), dir);
            return -1;
        }
    }
    return 0;
}

static inline int hs_cli_out_open(hs_cli_out *o, const char *path, char *err, size_t errlen)
{
    o->path = path;
    o->tmp[0] = '\0';
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    if (hs_cli_check_output(path, err, errlen) != 0)
        return -1;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* /dev/null, a FIFO, a terminal: written in place (a rename would
         * replace the device or pipe with a regular file) */
        if (!(o->f = fopen(path, "wb"))) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", path, (long)getpid()) >=
        sizeof o->tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    o->f = fopen(o->tmp, "wb");
    if (!o->f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Finish: ok -> rename into place; !ok -> remove the temp file. */
static inline int hs_cli_out_close(hs_cli_out *o, int ok, char *err, size_t errlen)
{
    if (o->f == stdout) {
        if (fflush(stdout) != 0) {
            snprintf(err, errlen, "error writing standard output");
            return -1;
        }
        return ok ? 0 : -1;
    }
    int bad = fclose(o->f) != 0;
    o->f = NULL;
    if (!o->tmp[0]) { /* written in place */
        if (ok && bad)
            snprintf(err, errlen, "%s: write error", o->path);
        return ok && !bad ? 0 : -1;
    }
    if (!ok || bad) {
        if (ok)
            snprintf(err, errlen, "%s: write error", o->path);
        unlink(o->tmp);
        return -1;
    }
    if (rename(o->tmp, o->path) != 0) {
        snprintf(err, errlen, "%s: %s", o->path, strerror(errno));
        unlink(o->tmp);
        return -1;
    }
    return 0;
}

/* Is option code c one of the trimming options (meaningless for reports
 * that draw everything: flame, convert)? */
static inline int hs_cli_is_trim_option(int c)
{
    return c == HS_OPT_NODECOUNT || c == HS_OPT_NODEFRACTION || c == HS_OPT_EDGEFRACTION ||
           c == HS_OPT_CUM;
}

#endif
