/* cmd_symbolize.c — `hotspur symbolize [-o OUT] FILE...`: give a profile
 * written with raw addresses (HOTSPUR_DEFER_SYMBOLS=1, e.g. by a daemon
 * that outlived `hotspur record`) its function names, files and lines,
 * from the modules its mappings name (symbolize/: ELF and DWARF, separate
 * debug files by build-id and .gnu_debuglink). Locations that already have
 * lines are kept, so running it twice changes nothing. */
#include <stdio.h>
#include <string.h>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"

static void symbolize_usage(FILE *out)
{
    fprintf(out,
            "usage: hotspur symbolize [-o OUT] FILE...\n"
            "\n"
            "Symbolize pprof profiles that were written with raw addresses (the agent\n"
            "leaves symbolizing to `hotspur record`; a profile written after record\n"
            "ended, by a daemon or a process record did not wait for, has none). The\n"
            "binaries and libraries named in the profile's mappings are read from disk\n"
            "(run it on the machine that ran the program); their debug files are found\n"
            "by build-id or .gnu_debuglink. Each FILE is rewritten in place, or, with\n"
            "one FILE, written to OUT.\n"
            "\n"
            "  -o, --output OUT  write the result to OUT instead of FILE\n"
            "  -h, --help        show this help\n");
}

int hs_cmd_symbolize(int argc, char **argv)
{
    static const hs_cli_spec spec = {.name = "symbolize", .usage = symbolize_usage,
                                      .takes = HS_CLI_OUTPUT, .in_order = true, .min_args = 1,
                                      .max_args = -1, .missing_msg = "missing FILE (see hotspur symbolize --help)"};
    const char *out = NULL;
    int first = 0;
    int prc = hs_cli_parse(&spec, argc, argv, NULL, NULL, &out, &first);
    if (prc >= 0)
        return prc;
    if (out && argc - first != 1)
        return hs_cli_fail("symbolize", "-o", "goes with one FILE");
    hs_symbolizer *sym = hs_symbolizer_new(); /* one for all: modules are opened once */
    if (!sym) {
        fprintf(stderr, "hotspur symbolize: cannot start the symbolizer\n");
        return 1;
    }
    int rc = 0;
    for (int i = first; i < argc; i++) {
        char err[256];
        hs_profile *p = hs_profile_read_file(argv[i], err, sizeof err);
        if (!p) {
            fprintf(stderr, "hotspur symbolize: %s: %s\n", argv[i], err);
            rc = 2;
            continue;
        }
        const char *dest = out ? out : argv[i];
        if (hs_symbolize_with_mappings(sym, p) != 0) {
            fprintf(stderr, "hotspur symbolize: %s: out of memory\n", argv[i]);
            rc = 1;
        } else if (hs_profile_write_file(p, dest, err, sizeof err) != 0) {
            fprintf(stderr, "hotspur symbolize: %s: %s\n", dest, err);
            rc = 1;
        }
        hs_profile_free(p);
    }
    hs_symbolizer_free(sym);
    return rc;
}
