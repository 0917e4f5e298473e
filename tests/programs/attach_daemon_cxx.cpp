/* attach_daemon_cxx.cpp — attach_daemon.c built as C++: its sites allocate
 * with new[] and free with delete[] (attach_heap.sh's C++ case). */
#include "attach_daemon.c"
