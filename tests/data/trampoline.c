/* tests/system/test_where_python.py's stand-in for CPython 3.12's perf trampolines (x86-64):
 * `python3 -X perf` runs each Python function through a small piece of code in anonymous
 * memory, one copy per function, that saves a frame and calls the interpreter
 * (Python/asm_trampoline.S: push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret), and
 * names each copy in /tmp/perf-PID.map ("py::function:file.py"). Here one such copy calls
 * spin(): with frame pointers the kernel's walk goes through it, and the perf map names
 * it. Prints its PID and the copy's address, then loops until killed or, with argv[1], for
 * that many seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clocks.h"

volatile unsigned long sink;

/* CPython's trampoline, byte for byte (Python/asm_trampoline.S, x86-64). */
static const unsigned char TRAMPOLINE[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3};

__attribute__((noinline)) void spin(void) {
    double until = cpu_ms() + 10;
    do {
        for (long i = 0; i < 50000; i++) sink += i;
    } while (cpu_ms() < until);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0;
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) return 1;
    memcpy(code, TRAMPOLINE, sizeof TRAMPOLINE);
    __builtin___clear_cache((char *)code, (char *)code + sizeof TRAMPOLINE);
    /* The function called is the fourth argument: %rcx (System V AMD64 ABI). */
    void (*trampoline)(void *, void *, void *, void (*)(void)) = (void *)code;
    double end = wall_s() + seconds;
    printf("%d\n%lx\n", getpid(), (unsigned long)code);
    fflush(stdout);
    while (seconds <= 0 || wall_s() < end) {
        trampoline(NULL, NULL, NULL, spin);
        sink++;
    }
    return 0;
}
