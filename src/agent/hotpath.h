/* hotpath.h — where the code of a heap sample goes.
 *
 * A heap sample runs once in thousands of allocations, by then with its
 * code out of the caches; its functions live in five files (heap.c, core.c,
 * unwind.c, stacktab.c), so the linker scattered them over some 90 KiB of
 * the agent's text. HS_SAMPLE_PATH puts them in one section, which the
 * linker's default script places together (with .text.hot, before the rest
 * of .text): a sample's code is a few contiguous KiB, fewer pages and
 * cache lines to bring back. */
#ifndef HS_AGENT_HOTPATH_H
#define HS_AGENT_HOTPATH_H

#define HS_SAMPLE_PATH __attribute__((section(".text.hot.hs_sample")))

#endif
