/* dlib2.c — a second plugin for tests/integration/agent_dlopen_reuse.sh,
 * the same size as dlib.c so the loader puts it where dlib.so was. */
static volatile unsigned long sink;

__attribute__((noinline)) void dlib2_burn(long n)
{
    unsigned long x = 1;
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}
