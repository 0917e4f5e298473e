// bench_harness_cxx.cpp — a C++ benchmark file for the harness's tests:
// operator new/delete reach the harness's counting malloc through libstdc++,
// so an array of 25 ints per operation reads 1 allocs/op and 100 B/op.
#include <hotspur/bench.h>

#include <memory>
#include <string>

HS_BENCH(cxx_new)
{
    while (hs_bench_loop(b)) {
        int *p = new int[25];
        hs_do_not_optimize(p);
        delete[] p;
    }
}

HS_BENCH_WITH(cxx_string, .params = "len=100")
{
    long len = hs_bench_arg(b, "len");
    while (hs_bench_loop(b)) {
        std::string s(static_cast<size_t>(len), 'x'); // one heap buffer of len + 1
        hs_do_not_optimize(s.data());
    }
}
