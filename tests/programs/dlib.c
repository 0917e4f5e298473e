/* dlib.c — a shared library the dlopen test loads at run time. */
static volatile unsigned long sink;

__attribute__((noinline)) void dlib_burn(long n)
{
    unsigned long x = 1;
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}
