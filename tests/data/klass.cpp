/* tests/system/test_where_calls.py's C++ target: nearly all of its CPU time is spent in
 * ns::Klass::method(int), called from main, built with -fno-omit-frame-pointer. The method
 * calls a function now and then, so that it is no leaf (GCC keeps no frame in a leaf that
 * does not touch the stack, and the walk would then skip its caller). Its symbols are
 * mangled (_ZN2ns5Klass6methodEi); the tree must show them demangled. Prints its PID,
 * then loops until killed or, with argv[1], for that many seconds of wall time. */
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <unistd.h>

namespace ns {
volatile unsigned long sink;

__attribute__((noinline)) void tick() { sink++; }

class Klass {
public:
    __attribute__((noinline)) void method(int n);
};

void Klass::method(int n) {
    for (long i = 0; i < n; i++) {
        sink += i;
        if ((i & 0xfffff) == 0) tick();
    }
}
}  // namespace ns

static double wall_s() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0;
    double end = wall_s() + seconds;
    std::printf("%d\n", getpid());
    std::fflush(stdout);
    ns::Klass k;
    while (seconds <= 0 || wall_s() < end) k.method(5000000);
    return 0;
}
