/* tests/system/test_where_calls.py's target: work() is called from a() for 75% of the
 * process's CPU time and from b() for 25% (by the thread CPU clock, as hotcold.c measures),
 * main -> a -> work and main -> b -> work, built with -fno-omit-frame-pointer so that the
 * kernel can walk its stack. Prints its PID, then loops until killed or, with argv[1], for
 * that many seconds of wall time. */
#include <stdio.h>
#include <stdlib.h>
#include "clocks.h"
#include <unistd.h>

volatile unsigned long sink;

/* Spin for `ms` milliseconds of this thread's CPU time. */
__attribute__((noinline)) void work(double ms) {
    double until = cpu_ms() + ms;
    do {
        for (long i = 0; i < 50000; i++) sink += i;
    } while (cpu_ms() < until);
}

/* The sink's increments keep the calls from being tail calls (a jump leaves no frame). */
__attribute__((noinline)) void a(void) { work(30); sink++; }
__attribute__((noinline)) void b(void) { work(10); sink++; }

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0;
    double end = wall_s() + seconds;
    printf("%d\n", getpid());
    fflush(stdout);
    while (seconds <= 0 || wall_s() < end) {
        a();
        b();
    }
    return 0;
}
