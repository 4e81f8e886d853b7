#!/bin/bash
# ONE command for the emulated-PMU tests: install the tools, build (or reuse) the arm64 guest image,
# boot it under QEMU TCG with an exact instruction counter, and run tests/hwpmu in it against this tree.
#
# usage: tests/hwpmu/run.sh [PYTEST ARGS...]        (default: all of tests/hwpmu)
# env:   TIPTOP_HWPMU_CACHE   image cache (default ~/.cache/tiptop-hwpmu); rebuilt when the hash of
#                             the build inputs (scripts, packages.txt, kloop.c) changes
#        TIPTOP_HWPMU_NO_INSTALL=1   never call apt-get (fail instead when something is missing)
#        TIPTOP_HWPMU_IPC_SHIFT      the -icount shift of the second boot (IPC = 1/2^shift; default 1)
# Exit status: 0 only when the guest ran and every test passed with NONE skipped; 1 otherwise, with
# one line saying why (no QEMU, no mirror, the guest did not boot, a test failed or skipped).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${TIPTOP_HWPMU_CACHE:-$HOME/.cache/tiptop-hwpmu}
IPC_SHIFT=${TIPTOP_HWPMU_IPC_SHIFT:-1}
T0=$(date +%s)
say() { echo "hwpmu: $*"; }
die() { echo "hwpmu: FAIL: $*" >&2; exit 1; }

# ---- 1. tools
need_tools() {
  local c
  for c in qemu-system-aarch64 mmdebstrap mksquashfs cpio aarch64-linux-gnu-gcc; do
    command -v "$c" >/dev/null 2>&1 || return 0
  done
  [ -e /usr/aarch64-linux-gnu/lib/libc.a ] || return 0
  # (no `cmd | grep -q`: with pipefail, grep's early exit makes the pipeline fail by SIGPIPE)
  [[ $(dpkg --print-foreign-architectures 2>/dev/null) == *arm64* ]] || return 0
  [[ $(apt-cache policy linux-image-arm64:arm64 2>/dev/null) == *"Candidate: "[0-9]* ]] || return 0
  return 1
}
if need_tools; then
  [ -z "${TIPTOP_HWPMU_NO_INSTALL:-}" ] || die "tools missing (qemu-system-arm, mmdebstrap, squashfs-tools, cpio, gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, arm64 apt architecture) and TIPTOP_HWPMU_NO_INSTALL is set"
  command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] || die "tools missing and cannot install them (needs root and apt-get): see docs/hwpmu.md"
  say "installing qemu-system-arm mmdebstrap squashfs-tools cpio gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
  export DEBIAN_FRONTEND=noninteractive
  mkdir -p "$(dirname "$CACHE")" || die "cannot create $(dirname "$CACHE")"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends qemu-system-arm mmdebstrap \
      squashfs-tools cpio gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
    && dpkg --add-architecture arm64 && apt-get update -qq; } >"$CACHE.apt.log" 2>&1 \
    || { die "apt-get failed (no network to the package mirror?); log: $CACHE.apt.log"; }
  need_tools && die "tools still missing after apt-get install; log: $CACHE.apt.log"
fi

# ---- 2. image (cached; keyed by the hash of everything that goes into it)
HASH=$(cat "$HERE/build-image.sh" "$HERE/guest-init.sh" "$HERE/stage1-init.sh" "$HERE/kloop.c" \
           "$HERE/packages.txt" | sha256sum | cut -c1-16)
IMG=$CACHE/image-$HASH
mkdir -p "$CACHE" || die "cannot create the cache directory $CACHE"
if [ -s "$IMG/rootfs.sqfs" ] && [ -s "$IMG/kver" ]; then
  say "guest image $IMG (cached, kernel $(cat "$IMG/kver"))"
else
  say "building the guest image $IMG (about a minute)"
  rm -rf "$IMG.tmp"
  B0=$(date +%s)
  "$HERE/build-image.sh" "$IMG.tmp" >"$CACHE/build.log" 2>&1 \
    || { tail -20 "$CACHE/build.log" >&2; die "cannot build the guest image (network to the Debian mirror? see $CACHE/build.log)"; }
  rm -rf "$IMG" && mv "$IMG.tmp" "$IMG" || die "cannot move the image into $IMG"
  # keep only the current image
  find "$CACHE" -maxdepth 1 -name 'image-*' ! -name "image-$HASH" -exec rm -rf {} +
  say "built in $(( $(date +%s) - B0 )) s: $(grep '^build-image: ' "$CACHE/build.log" | tr '\n' ' ')"
fi

# ---- 3. boots: all tests with shift=0 (cycles == instructions), then the IPC tests with another shift
CTL=$(mktemp -d "${TMPDIR:-/tmp}/tiptop-hwpmu.XXXXXX")
trap 'rm -rf "$CTL"' EXIT
status=0
boot() {  # boot SHIFT NAME PYTEST-ARGS...
  local shift=$1 name=$2; shift 2
  local ctl=$CTL/$name; mkdir -p "$ctl"
  local b0; b0=$(date +%s)
  say "boot $name: -icount shift=$shift, python3 -m pytest $*"
  ICOUNT_SHIFT=$shift GUEST_ENV="PYTHONPATH=$ROOT TIPTOP_HWPMU_REPORT=/ctl/report.txt" \
    "$HERE/guest-run.sh" "$IMG" "$ROOT" "$ctl" -- \
    python3 -m pytest -p no:cacheprovider -q -rfEs --junitxml=/ctl/junit.xml "$@"
  local rc=$?
  say "boot $name: exit $rc after $(( $(date +%s) - b0 )) s"
  [ -s "$ctl/report.txt" ] && sed "s/^/hwpmu: [$name] /" "$ctl/report.txt"
  if [ ! -s "$ctl/junit.xml" ]; then
    echo "hwpmu: FAIL: boot $name produced no test results (the guest did not boot or pytest did not start)" >&2
    status=1; return
  fi
  local counts
  counts=$(python3 - "$ctl/junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = r if r.tag == "testsuite" else r.find("testsuite")
print(s.get("tests"), s.get("failures"), s.get("errors"), s.get("skipped"))
PY
)
  read -r n f e s <<<"$counts"
  say "boot $name: $n tests, $f failed, $e errors, $s skipped"
  if [ "$rc" != 0 ] || [ "${f:-1}" != 0 ] || [ "${e:-1}" != 0 ]; then status=1
  elif [ "${n:-0}" = 0 ]; then echo "hwpmu: FAIL: boot $name ran no tests" >&2; status=1
  elif [ "${s:-1}" != 0 ]; then echo "hwpmu: FAIL: boot $name skipped $s test(s); in the guest every test must run" >&2; status=1
  fi
}
ARGS=("$@"); [ ${#ARGS[@]} -gt 0 ] || ARGS=("$ROOT/tests/hwpmu")
boot 0 shift0 "${ARGS[@]}"
[ $# -gt 0 ] || boot "$IPC_SHIFT" "shift$IPC_SHIFT" "$ROOT/tests/hwpmu" -m hwpmu -k ipc
say "total $(( $(date +%s) - T0 )) s"
[ $status = 0 ] && say "PASS" || echo "hwpmu: FAIL (see above)" >&2
exit $status
