/* debuginfo.c — the debug info API of `hotspur serve` (docs/debuginfo.md):
 *
 *   PUT|POST /api/v1/debuginfo/BUILD_ID   body: an ELF file with debug info
 *            (an unstripped binary or a .debug file) whose build ID is
 *            BUILD_ID: 201 {"build_id":...,"size":N}; 400 when the body is
 *            not ELF, has another build ID or no debug info, 413 over
 *            --max-debuginfo;
 *   GET      /api/v1/debuginfo             {"uploads":[{"build_id","size","time"}...]}
 *   GET      /api/v1/debuginfo/BUILD_ID    that entry, or 404;
 *   DELETE   /api/v1/debuginfo/BUILD_ID    204, or 404.
 * BUILD_ID is 2..128 lowercase hex digits (anything else: 400, so no path
 * can be formed from it). http.c streams an upload's body into a temporary
 * file beside the uploads; names.c validates it and moves it into place. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/names.h"
#include "server/server.h"

static void respond_json(hs_http_response *rs, int status, char *body)
{
    rs->status = status;
    rs->content_type = "application/json";
    rs->body = body;
    rs->len = body ? strlen(body) : 0;
    if (!body)
        hs_respond_error(rs, 500, "out of memory");
}

static char *entry_json(const hs_names_upload *u)
{
    char *s = NULL;
    if (asprintf(&s, "{\"build_id\":\"%s\",\"size\":%" PRIu64 ",\"time\":%" PRId64 "}", u->build_id, u->size,
                 u->mtime_s) < 0)
        return NULL;
    return s;
}

static int list(hs_names *n, const char *one, hs_http_response *rs)
{
    hs_names_upload *u = NULL;
    size_t count = 0;
    if (hs_names_list_uploads(n, &u, &count) != 0)
        return hs_respond_error(rs, 500, "cannot list the uploads");
    if (one) {
        for (size_t i = 0; i < count; i++)
            if (strcmp(u[i].build_id, one) == 0) {
                char *e = entry_json(&u[i]), *s = NULL;
                free(u);
                if (e && asprintf(&s, "%s\n", e) < 0)
                    s = NULL;
                free(e);
                respond_json(rs, 200, s);
                return rs->status;
            }
        free(u);
        return hs_respond_error(rs, 404, "no debug info uploaded for %s", one);
    }
    size_t cap = 32 + count * 200;
    char *s = malloc(cap);
    size_t len = 0;
    if (s) {
        len += (size_t)snprintf(s, cap, "{\"uploads\":[");
        for (size_t i = 0; i < count; i++) {
            char *e = entry_json(&u[i]);
            if (!e) {
                free(s);
                s = NULL;
                break;
            }
            len += (size_t)snprintf(s + len, cap - len, "%s%s", i ? "," : "", e);
            free(e);
        }
        if (s)
            snprintf(s + len, cap - len, "]}\n");
    }
    free(u);
    respond_json(rs, 200, s);
    return rs->status;
}

int hs_debuginfo_handle(hs_names *n, const hs_http_request *rq, const char *tmp, hs_http_response *rs)
{
    const char *id = NULL;
    if (strncmp(rq->path, "/api/v1/debuginfo/", 18) == 0)
        id = rq->path + 18;
    bool get = strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0;
    if (id && !hs_names_build_id_ok(id)) {
        if (tmp)
            unlink(tmp);
        return hs_respond_error(rs, 400, "'%.200s' is not a build ID: 2 to 128 lowercase hex digits", id);
    }
    if (rq->n_params)
        return hs_respond_error(rs, 400, "/api/v1/debuginfo takes no parameters");
    if (get)
        return list(n, id, rs);
    if (!id)
        return hs_respond_error(rs, 405, "%s needs a build ID: /api/v1/debuginfo/BUILD_ID", rq->method);
    char err[512];
    if (strcmp(rq->method, "DELETE") == 0) {
        int st = hs_names_remove_upload(n, id, err, sizeof err);
        if (st)
            return hs_respond_error(rs, st, "%s", err);
        rs->status = 204;
        rs->content_type = "application/json";
        return 204;
    }
    if (!tmp)
        return hs_respond_error(rs, 400, "this server keeps no uploaded debug info");
    int st = hs_names_add_upload(n, id, tmp, err, sizeof err);
    if (st)
        return hs_respond_error(rs, st, "%s", err);
    hs_names_upload u = {0};
    snprintf(u.build_id, sizeof u.build_id, "%s", id);
    char *s = NULL, *e = NULL;
    hs_names_upload *all = NULL;
    size_t count = 0;
    if (hs_names_list_uploads(n, &all, &count) == 0)
        for (size_t i = 0; i < count; i++)
            if (strcmp(all[i].build_id, id) == 0)
                u = all[i];
    free(all);
    if ((e = entry_json(&u)) && asprintf(&s, "%s\n", e) < 0)
        s = NULL;
    free(e);
    respond_json(rs, 201, s);
    return rs->status;
}
