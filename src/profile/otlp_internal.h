/* otlp_internal.h — what otlp_decode.c and otlp_json.c share: the
 * protobuf-c request type and the JSON reader that fills it. */
#ifndef HS_PROFILE_OTLP_INTERNAL_H
#define HS_PROFILE_OTLP_INTERNAL_H

#include <stddef.h>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "profile/otlp.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest OtlpRequest;

/* An OTLP/JSON body into a request as protobuf-c would have unpacked it
 * (free it with protobuf_c_message_free_unpacked). 0, or HS_OTLP_BAD /
 * HS_OTLP_NOMEM with a message naming the key. */
int hs_otlp_json_request(const void *data, size_t len, OtlpRequest **out, char *err, size_t errlen);

/* The pprof profiles of an unpacked request (hs_otlp_decode's second half). */
int hs_otlp_from_request(const OtlpRequest *rq, size_t max_samples, hs_otlp_batch *out, char *err, size_t errlen);

#endif
