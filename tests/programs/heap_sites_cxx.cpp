// heap_sites_cxx.cpp — C++ allocation sites with known bytes and objects, for
// tests/integration/heap_cxx.sh: new[]/delete[], new/delete of an object,
// aligned new, nothrow new[], some kept (reachable from a global) and some
// leaked. The stack of each allocation is malloc <- operator new[]/new (in
// libstdc++) <- site_cxx_*; the test charges a sample to the site_cxx_*
// frame nearest the leaf. Prints the same truth table as heap_sites.c:
//
//   site NAME ALLOC_OBJECTS ALLOC_BYTES INUSE_OBJECTS INUSE_BYTES LEAK_OBJECTS LEAK_BYTES
//
// Sizes are the bytes operator new is asked for: for new T[n] of a trivially
// destructible T that is n * sizeof(T) (no array cookie); for a T with a
// destructor the compiler adds an 8-byte cookie, counted here as the
// compiler does (sizeof(size_t) + n * sizeof(T)).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#define NOINLINE __attribute__((noinline, noclone, no_icf)) // no_icf: identical bodies stay apart

namespace {

struct Site {
    const char *name;
    long alloc_objects, alloc_bytes, inuse_objects, inuse_bytes, leak_objects, leak_bytes;
};

enum { S_NEW_ARRAY, S_NEW_OBJECT, S_NEW_DTOR_ARRAY, S_NEW_ALIGNED, S_NEW_NOTHROW, S_VECTOR,
       S_LEAK_ARRAY, S_COUNT };

Site g_sites[S_COUNT] = {
    {"site_cxx_new_array", 0, 0, 0, 0, 0, 0},
    {"site_cxx_new_object", 0, 0, 0, 0, 0, 0},
    {"site_cxx_new_dtor_array", 0, 0, 0, 0, 0, 0},
    {"site_cxx_new_aligned", 0, 0, 0, 0, 0, 0},
    {"site_cxx_new_nothrow", 0, 0, 0, 0, 0, 0},
    {"site_cxx_vector", 0, 0, 0, 0, 0, 0},
    {"site_cxx_leak_array", 0, 0, 0, 0, 0, 0},
};

volatile std::uintptr_t g_sink;

struct Obj {
    long a[7]; // 56 bytes
};

struct WithDtor {
    int v[5]; // 20 bytes, with a destructor: new[] adds a cookie
    ~WithDtor() { g_sink = g_sink + static_cast<std::uintptr_t>(v[0]); }
};

struct alignas(64) Aligned {
    char c[192];
};

void count_alloc(int s, std::size_t n)
{
    g_sites[s].alloc_objects++;
    g_sites[s].alloc_bytes += static_cast<long>(n);
}

void count_kept(int s, std::size_t n)
{
    g_sites[s].inuse_objects++;
    g_sites[s].inuse_bytes += static_cast<long>(n);
}

} // namespace

// Kept blocks are reachable from these globals: plain arrays, not
// std::vectors, whose destructors would free their storage at exit and so
// make the kept blocks unreachable before the leak check.
template <class T> struct Keep {
    T *v[64];
    int n;
    void push_back(T *p)
    {
        if (n == 64)
            std::exit(1);
        v[n++] = p;
    }
};
Keep<int> g_kept_arrays;
Keep<Obj> g_kept_objects;
Keep<WithDtor> g_kept_dtor;
Keep<Aligned> g_kept_aligned;
Keep<std::vector<long>> g_kept_vectors;

NOINLINE void site_cxx_new_array(int n, int len, int nkeep)
{
    for (int i = 0; i < n; i++) {
        int *p = new int[len];
        p[0] = i;
        p[len - 1] = i;
        count_alloc(S_NEW_ARRAY, sizeof(int) * static_cast<std::size_t>(len));
        if (i < nkeep) {
            g_kept_arrays.push_back(p);
            count_kept(S_NEW_ARRAY, sizeof(int) * static_cast<std::size_t>(len));
        } else {
            g_sink = g_sink + static_cast<std::uintptr_t>(p[len / 2]);
            delete[] p;
        }
    }
}

NOINLINE void site_cxx_new_object(int n, int nkeep)
{
    for (int i = 0; i < n; i++) {
        Obj *o = new Obj();
        o->a[0] = i;
        count_alloc(S_NEW_OBJECT, sizeof(Obj));
        if (i < nkeep) {
            g_kept_objects.push_back(o);
            count_kept(S_NEW_OBJECT, sizeof(Obj));
        } else {
            g_sink = g_sink + static_cast<std::uintptr_t>(o->a[0]);
            delete o;
        }
    }
}

NOINLINE void site_cxx_new_dtor_array(int n, int len, int nkeep)
{
    const std::size_t bytes = sizeof(std::size_t) + sizeof(WithDtor) * static_cast<std::size_t>(len);
    for (int i = 0; i < n; i++) {
        WithDtor *p = new WithDtor[len];
        p[0].v[0] = i;
        count_alloc(S_NEW_DTOR_ARRAY, bytes);
        if (i < nkeep) {
            g_kept_dtor.push_back(p);
            count_kept(S_NEW_DTOR_ARRAY, bytes);
        } else {
            delete[] p;
        }
    }
}

NOINLINE void site_cxx_new_aligned(int n, int nkeep)
{
    for (int i = 0; i < n; i++) {
        Aligned *p = new Aligned; // operator new(size_t, align_val_t)
        if (reinterpret_cast<std::uintptr_t>(p) % alignof(Aligned)) {
            std::fprintf(stderr, "heap_sites_cxx: misaligned new\n");
            std::exit(1);
        }
        p->c[0] = 1;
        count_alloc(S_NEW_ALIGNED, sizeof(Aligned));
        if (i < nkeep) {
            g_kept_aligned.push_back(p);
            count_kept(S_NEW_ALIGNED, sizeof(Aligned));
        } else {
            g_sink = g_sink + static_cast<std::uintptr_t>(p->c[0]);
            delete p;
        }
    }
}

NOINLINE void site_cxx_new_nothrow(int n, int len)
{
    for (int i = 0; i < n; i++) {
        char *p = new (std::nothrow) char[len];
        if (!p)
            std::exit(1);
        std::memset(p, 'x', static_cast<std::size_t>(len));
        count_alloc(S_NEW_NOTHROW, static_cast<std::size_t>(len));
        g_sink = g_sink + static_cast<std::uintptr_t>(p[len / 2]);
        delete[] p;
    }
}

// std::vector<long>: one operator new for the vector object, one for its
// reserved storage.
NOINLINE void site_cxx_vector(int n, int len, int nkeep)
{
    for (int i = 0; i < n; i++) {
        auto *v = new std::vector<long>();
        v->reserve(static_cast<std::size_t>(len));
        v->push_back(i);
        count_alloc(S_VECTOR, sizeof(std::vector<long>));
        count_alloc(S_VECTOR, sizeof(long) * static_cast<std::size_t>(len));
        if (i < nkeep) {
            g_kept_vectors.push_back(v);
            count_kept(S_VECTOR, sizeof(std::vector<long>));
            count_kept(S_VECTOR, sizeof(long) * static_cast<std::size_t>(len));
        } else {
            g_sink = g_sink + static_cast<std::uintptr_t>((*v)[0]);
            delete v;
        }
    }
}

NOINLINE void site_cxx_leak_array(int n, int len)
{
    for (int i = 0; i < n; i++) {
        char *p = new char[len];
        std::memset(p, 'L', static_cast<std::size_t>(len));
        count_alloc(S_LEAK_ARRAY, static_cast<std::size_t>(len));
        count_kept(S_LEAK_ARRAY, static_cast<std::size_t>(len));
        g_sites[S_LEAK_ARRAY].leak_objects++;
        g_sites[S_LEAK_ARRAY].leak_bytes += len;
        __asm__ volatile("" : : "r"(p) : "memory");
    }
}

NOINLINE void scrub_stack()
{
    volatile char buf[64 * 1024];
    std::memset(const_cast<char *>(buf), 0, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

int main()
{
    std::printf("heap_sites_cxx\n");
    std::fflush(stdout);

    site_cxx_new_array(40, 250, 10);     // 40 x 1000 B, 10 kept
    site_cxx_new_object(100, 40);        // 100 x 56 B, 40 kept
    site_cxx_new_dtor_array(20, 10, 5);  // 20 x (8 + 200) B, 5 kept
    site_cxx_new_aligned(12, 3);         // 12 x 192 B @64, 3 kept
    site_cxx_new_nothrow(25, 777);       // 25 x 777 B, none kept
    site_cxx_vector(30, 100, 6);         // 30 x (24 + 800) B, 6 kept
    site_cxx_leak_array(4, 4321);        // 4 x 4321 B leaked
    scrub_stack();

    for (const Site &x : g_sites)
        std::printf("site %s %ld %ld %ld %ld %ld %ld\n", x.name, x.alloc_objects, x.alloc_bytes,
                    x.inuse_objects, x.inuse_bytes, x.leak_objects, x.leak_bytes);
    return 0;
}
