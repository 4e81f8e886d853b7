/* tests/system/test_where_offcpu.py's target: a process that waits, 70% of its time in
 * nanosleep() called from sleeper_a() and 30% in read() on a pipe called from reader_b()
 * (a child process writes the byte 30 ms after it is asked: the child is not the process
 * watched). Built with -fno-omit-frame-pointer. Each wait goes through a function of its
 * own (pause_ms, wait_byte): glibc's wrappers keep no frame, so the walk skips the
 * function that calls them (docs/where.md, "Call chains"), and that is then the helper.
 * Prints its PID, then loops until killed or, with argv[1], for that many seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"

volatile unsigned long sink;

__attribute__((noinline)) void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

__attribute__((noinline)) void wait_byte(int fd) {
    char c;
    if (read(fd, &c, 1) != 1) exit(1);
}

/* The sink's increments keep the calls from being tail calls (a jump leaves no frame). */
__attribute__((noinline)) void sleeper_a(void) { pause_ms(70); sink++; }

__attribute__((noinline)) void reader_b(int ask, int answer) {
    char c = 0;
    if (write(ask, &c, 1) != 1) exit(1);
    wait_byte(answer);
    sink++;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0;
    int ask[2], answer[2];
    if (pipe(ask) || pipe(answer)) return 1;
    if (fork() == 0) {
        /* Only the parent writes questions: the child sees end-of-file, and ends, when
           the parent ends (its test killed it), never waiting on its own write end. */
        close(ask[1]);
        close(answer[0]);
        char c;
        while (read(ask[0], &c, 1) == 1) {
            pause_ms(30);
            if (write(answer[1], &c, 1) != 1) return 0;
        }
        return 0;
    }
    double end = wall_s() + seconds;
    printf("%d\n", getpid());
    fflush(stdout);
    while (seconds <= 0 || wall_s() < end) {
        sleeper_a();
        reader_b(ask[1], answer[0]);
    }
    return 0;
}
