#!/usr/bin/env bash
# Run the test suite as on a machine WITHOUT a hardware PMU (most VMs and containers), on a
# machine that has one: an LD_PRELOAD shim (nopmu.c) makes perf_event_open(2) answer ENOENT
# for hardware, HW_CACHE and RAW events, as the kernel does there. tiptop calls libc's
# syscall() through cffi, and the tests' own probes through ctypes, so both see the shim.
#
# usage: tests/nopmu/run.sh [PYTEST ARGS...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(mktemp -d "${TMPDIR:-/tmp}/tiptop-nopmu.XXXXXX")
trap 'rm -rf "$build"' EXIT
chmod 755 "$build"  # the unprivileged tests (uid 65534) load it too
cc -shared -fPIC -O2 -o "$build/nopmu.so" "$here/nopmu.c" -ldl
chmod 755 "$build/nopmu.so"
cd "$here/../.."
echo "nopmu: running the tests with perf_event_open(HARDWARE/HW_CACHE/RAW) -> ENOENT"
LD_PRELOAD="$build/nopmu.so" python3 -m pytest -q "$@"
