/* assets.c — the web UI's files (web/), embedded in the binary at build time
 * by src/report/embed.cmake (its DIR mode writes the hs_web_assets table), so
 * `hotspur serve` needs nothing installed next to it. http.c answers GETs
 * that are not API calls with hs_asset_get(). */
#include <string.h>

#include "server/server.h"

typedef struct {
    const char *path;
    const unsigned char *data;
    size_t len;
} hs_embedded_file;

extern const hs_embedded_file hs_web_assets[];

static const char *hs_asset_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".json", "application/json"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

const void *hs_asset_get(const char *path, size_t *len, const char **content_type)
{
    if (!path)
        return NULL;
    /* the query string is not part of the file's name */
    size_t n = strcspn(path, "?#");
    if (n == 1 && path[0] == '/') {
        path = "/index.html";
        n = strlen(path);
    }
    for (const hs_embedded_file *f = hs_web_assets; f->path; f++) {
        if (strlen(f->path) == n && memcmp(f->path, path, n) == 0) {
            if (len)
                *len = f->len;
            if (content_type)
                *content_type = hs_asset_type(f->path);
            return f->data;
        }
    }
    return NULL;
}
