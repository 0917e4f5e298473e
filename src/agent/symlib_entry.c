/* symlib_entry.c — libhotspur-symbolize.so's side of symlib.h: its one
 * exported symbol, the table of the symbolizer's functions the agent calls.
 * The companion links symbolize/ and profile/ (the same model the agent
 * builds: one build, checked by version and size). */
#include "agent/symlib.h"
#include "symbolize/symbolize.h"

__attribute__((visibility("default"))) const hs_symlib hs_symlib_entry = {
    .version = HS_AGENT_VERSION,
    .profile_size = sizeof(hs_profile),
    .table_size = sizeof(hs_symlib),
    .create = hs_symbolizer_new,
    .destroy = hs_symbolizer_free,
    .add_module = hs_symbolizer_add_module,
    .add_image = hs_symbolizer_add_image,
    .symbolize_profile = hs_symbolize_profile,
};
