/* api.c — the public C API (include/hotspur/hotspur.h) on top of the agent. */
#define _GNU_SOURCE
#include "hotspur/hotspur.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/labels.h"
#include "agent/threads.h"

#define HS_API __attribute__((visibility("default")))

HS_API const char *hotspur_version(void)
{
    return HS_AGENT_VERSION;
}

HS_API int hotspur_start(const hotspur_config *cfg)
{
    hs_config c;
    hs_agent_config_defaults(&c);
    c.follow = false;
    if (cfg) {
        if ((cfg->output && strlen(cfg->output) >= sizeof c.output) || cfg->cpu_hz > 10000 ||
            cfg->heap_rate < 0 || cfg->wall_hz < 0 || cfg->wall_hz > 1000) {
            errno = EINVAL;
            return -1;
        }
        if (cfg->output && *cfg->output)
            snprintf(c.output, sizeof c.output, "%s", cfg->output);
        c.cpu = cfg->cpu_hz >= 0;
        if (cfg->cpu_hz > 0)
            c.cpu_hz = cfg->cpu_hz;
        c.heap = cfg->heap != 0;
        if (cfg->heap_rate > 0)
            c.heap_rate = cfg->heap_rate;
        c.wall_hz = cfg->wall_hz;
        c.lock = cfg->lock != 0;
    }
    return hs_agent_start_config(&c);
}

HS_API int hotspur_stop(void)
{
    if (!hs_g.started) {
        errno = ESRCH;
        return -1;
    }
    hs_agent_pause();
    return 0;
}

HS_API int hotspur_dump(const char *path)
{
    if (path && !*path) {
        errno = EINVAL;
        return -1;
    }
    return hs_agent_dump(path, NULL, NULL) < 0 ? -1 : 0;
}

HS_API int hotspur_set_label(const char *key, const char *value)
{
    if (hs_labels_set(key, value) != 0)
        return -1;
    hs_threads_set_labels(hs_self.labels);
    return 0;
}

HS_API int hotspur_clear_labels(void)
{
    hs_labels_clear();
    hs_threads_set_labels(0);
    return 0;
}
