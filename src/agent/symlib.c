/* symlib.c — find and load libhotspur-symbolize.so (see symlib.h): the
 * file of that name in the directory libhotspur.so was loaded from, opened
 * once per process (a fork child inherits it) with RTLD_LOCAL, so its
 * libraries (elfutils, libstdc++) stay out of the program's symbol lookup. */
#define _GNU_SOURCE
#include "agent/symlib.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core.h"
#include "agent/modules.h"

static const hs_symlib *g_lib;
static int g_tried;
static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;

/* The companion's path: HS_SYMLIB_NAME beside this library. 0, or -1. */
static int companion_path(char *out, size_t outlen)
{
    Dl_info di;
    char self[PATH_MAX];
    if (dladdr((void *)hs_symlib_get, &di) && di.dli_fname && di.dli_fname[0] == '/')
        snprintf(self, sizeof self, "%s", di.dli_fname);
    else if (hs_modules_mapped_file((uintptr_t)hs_symlib_get, self, sizeof self) != 0)
        return -1;
    char *slash = strrchr(self, '/');
    *slash = 0;
    int n = snprintf(out, outlen, "%s/%s", self, HS_SYMLIB_NAME);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

static void load(void)
{
    static const char fallback[] =
        "profiles are written with addresses only (name their frames with `hotspur symbolize FILE`)";
    char path[PATH_MAX];
    hs_self.in_agent++; /* the loader's allocations are the agent's */
    if (companion_path(path, sizeof path) != 0) {
        fprintf(stderr, "hotspur: cannot find the agent's own file to load %s beside it; %s\n",
                HS_SYMLIB_NAME, fallback);
        goto out;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "hotspur: cannot load the symbolizer: %s; %s\n", dlerror(), fallback);
        goto out;
    }
    const hs_symlib *t = dlsym(h, HS_SYMLIB_ENTRY);
    if (!t || t->table_size != sizeof *t || t->profile_size != sizeof(hs_profile) ||
        strcmp(t->version, HS_AGENT_VERSION) != 0) {
        fprintf(stderr, "hotspur: %s is not from this build of the agent (version %s, want %s); %s\n",
                path, t ? t->version : "unknown", HS_AGENT_VERSION, fallback);
        dlclose(h);
        goto out;
    }
    g_lib = t;
out:
    hs_self.in_agent--;
}

const hs_symlib *hs_symlib_get(void)
{
    pthread_mutex_lock(&g_load_lock);
    if (!g_tried) {
        g_tried = 1;
        load();
    }
    const hs_symlib *t = g_lib;
    pthread_mutex_unlock(&g_load_lock);
    return t;
}

void hs_symlib_preload(void)
{
    if ((!hs_g.cfg.defer_symbols || hs_g.cfg.continuous) && !hs_g.cfg.symbolize_server)
        hs_symlib_get();
}
