/* api.c — the public C API (include/hotspur/hotspur.h) on top of the agent. */
#define _GNU_SOURCE
#include "hotspur/hotspur.h"

#include <errno.h>

#include "agent/agent.h"
#include "agent/output.h"

#define HS_API __attribute__((visibility("default")))

HS_API const char *hotspur_version(void)
{
    return HS_AGENT_VERSION;
}

HS_API int hotspur_dump(const char *path)
{
    if (!path || !*path) {
        errno = EINVAL;
        return -1;
    }
    if (!hs_g.started || !hs_g.cfg.cpu) {
        errno = ESRCH;
        return -1;
    }
    return hs_output_write_cpu(path);
}
