/* fetch.h — profiles named by a URL: every command that reads a profile
 * file also accepts http:// and https:// (a `hotspur serve` query such as
 * http://127.0.0.1:4040/api/v1/profile?service=S&type=cpu, or any pprof
 * endpoint like Go's /debug/pprof/profile). One GET with libcurl: bounded
 * in time (HOTSPUR_FETCH_TIMEOUT seconds, default 120) and size (1 GiB),
 * with 'Authorization: Bearer $HOTSPUR_TOKEN' when that is set; an HTTP
 * error becomes a message with the status and the server's own message. */
#ifndef HS_CLI_FETCH_H
#define HS_CLI_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

/* Does arg name a URL (http:// or https://)? */
bool hs_fetch_is_url(const char *arg);

/* GET url into a malloc'd buffer (*out, *len). 0, or -1 with a one-line
 * message ("HTTP 404: no profiles of service 'x' ..."). */
int hs_fetch_url(const char *url, char **out, size_t *len, char *err, size_t errlen);

/* The same with any method and, if body is not NULL, body_len bytes read
 * from it as the request body (PUT, POST): a stalled transfer times out,
 * a long one does not. */
int hs_fetch_request(const char *method, const char *url, FILE *body, uint64_t body_len, char **out, size_t *len,
                     char *err, size_t errlen);

/* The help paragraph of every command that reads profiles. */
void hs_fetch_help(FILE *out);

#endif
