/* control_path.h — where control sockets live: the one rule shared by the
 * agent (which creates them) and `hotspur ctl` (which looks for them).
 * $HOTSPUR_RUNTIME_DIR, else /tmp/hotspur-<uid>; a socket is <dir>/<pid>.sock. */
#ifndef HS_AGENT_CONTROL_PATH_H
#define HS_AGENT_CONTROL_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void hs_control_runtime_dir(char *out, size_t outlen)
{
    const char *env = getenv("HOTSPUR_RUNTIME_DIR");
    if (env && *env)
        snprintf(out, outlen, "%s", env);
    else
        snprintf(out, outlen, "/tmp/hotspur-%u", (unsigned)getuid());
}

#endif
