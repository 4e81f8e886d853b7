#!/bin/bash
# Boot the arm64 guest (emulated PMUv3, exact instruction counts) and run one command in it.
#
# usage: guest-run.sh IMAGE_DIR SHARE_DIR CTL_DIR -- CMD [ARGS...]
#   IMAGE_DIR  what build-image.sh made (vmlinuz, stage1.cpio.gz, rootfs.sqfs)
#   SHARE_DIR  mounted read-only over 9p at the SAME absolute path in the guest; the command's cwd
#   CTL_DIR    an empty host directory mounted read-write at /ctl (results come back through it)
# env: ICOUNT_SHIFT (0: cycles = instructions; N: cycles = instructions * 2^N), PARANOID (1),
#      GUEST_TIMEOUT (600 s), QEMU_CPU (cortex-a72), GUEST_ENV (extra "K=V ..." exported in the guest)
# Exit status: the command's, or 255 when the guest reported none (did not boot, timed out).
# -icount shift=N,sleep=off: QEMU counts guest instructions exactly and the virtual clock (and so the
# PMU cycle counter) advances 2^N ns per instruction; idle time is skipped (sleep=off). Keep -smp 1:
# the instruction counter is global to QEMU, so a second vCPU's work would be counted too.
set -uo pipefail
IMG=$1 SHARE=$(cd "$2" && pwd) CTL=$(cd "$3" && pwd); shift 3
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: guest-run.sh IMAGE_DIR SHARE_DIR CTL_DIR -- CMD..." >&2; exit 2; }
SHIFT=${ICOUNT_SHIFT:-0}
{
  echo "export PYTHONDONTWRITEBYTECODE=1 TIPTOP_HWPMU_GUEST=1 TIPTOP_HWPMU_ICOUNT_SHIFT=$SHIFT"
  for kv in ${GUEST_ENV:-}; do printf 'export %q\n' "$kv"; done
  printf '%q ' "$@"; echo
} > "$CTL/cmd.sh"
echo "$SHARE" > "$CTL/share_path"
echo "${PARANOID:-1}" > "$CTL/paranoid"
rm -f "$CTL/rc"
timeout "${GUEST_TIMEOUT:-600}" qemu-system-aarch64 -M virt -cpu "${QEMU_CPU:-cortex-a72}" -smp 1 -m 2048 \
  -nographic -nic none -no-reboot -monitor none -serial stdio -icount "shift=$SHIFT,sleep=off" \
  -kernel "$IMG/vmlinuz" -initrd "$IMG/stage1.cpio.gz" \
  -drive if=none,id=root,file="$IMG/rootfs.sqfs",format=raw,readonly=on -device virtio-blk-pci,drive=root \
  -append "console=ttyAMA0 rdinit=/init quiet loglevel=3" \
  -virtfs local,path="$CTL",mount_tag=ctl,security_model=none \
  -virtfs local,path="$SHARE",mount_tag=work,security_model=none,readonly=on \
  </dev/null | tr -d '\r'
[ -s "$CTL/rc" ] && exit "$(cat "$CTL/rc")"
echo "guest-run: the guest reported no exit status (boot failure or timeout)" >&2
exit 255
