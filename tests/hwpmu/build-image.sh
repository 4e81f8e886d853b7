#!/bin/bash
# Build the arm64 guest image for the hwpmu tests into DIR (default: $TIPTOP_HWPMU_CACHE/image).
#
# usage: build-image.sh OUTDIR
# Produces OUTDIR/{vmlinuz, stage1.cpio.gz, rootfs.sqfs, kver}.  No arm64 code runs on the host:
# `mmdebstrap --variant=extract` only downloads and unpacks the packages (maintainer scripts are not
# run), so the two things they would have done are done here by hand: the libblas/liblapack
# alternatives links numpy needs, and byte-compiling the .py files (.pyc are architecture-independent;
# host and guest are both CPython 3.11; without them `import numpy` costs ~8 s more under TCG).
# Recipe: /work/shared/pmu-vm/README.md (build-rootfs.sh there).
# env: KVER (guest kernel, e.g. 6.1.0-56-arm64; default: what linux-image-arm64:arm64 depends on now)
#      MIRROR (default http://deb.debian.org/debian), SUITE (bookworm)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:?usage: build-image.sh OUTDIR}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SUITE=${SUITE:-bookworm}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=$(mktemp -d "$OUT/build.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"

PKGS=$(grep -v '^\s*#' "$HERE/packages.txt" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
if [ -z "${KVER:-}" ]; then
  KVER=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null \
         | sed -n 's/.*Depends: linux-image-\([0-9][^ :]*-arm64\)\(:arm64\)\{0,1\}$/\1/p' | head -1)
  [ -n "$KVER" ] || { echo "build-image: cannot find the arm64 kernel version (apt-cache depends linux-image-arm64:arm64; is arm64 added with dpkg --add-architecture and apt-get update run?)" >&2; exit 1; }
fi
echo "build-image: kernel $KVER, packages $PKGS"

# 1. kernel: the Debian arm64 Image is uncompressed and loads directly with -kernel
apt-get download -q "linux-image-$KVER:arm64" >/dev/null
mkdir kpkg && dpkg-deb -x linux-image-"${KVER}"_*_arm64.deb kpkg
rm -f linux-image-*.deb

# 2. root filesystem
mmdebstrap --quiet --variant=extract --arch=arm64 --include="$PKGS" "$SUITE" rootfs \
  "deb $MIRROR $SUITE main" "deb http://deb.debian.org/debian-security $SUITE-security main"
for d in blas lapack; do
  for f in rootfs/usr/lib/aarch64-linux-gnu/$d/lib$d.so.3; do
    [ -e "$f" ] && ln -sf $d/lib$d.so.3 rootfs/usr/lib/aarch64-linux-gnu/lib$d.so.3
  done
done
/usr/bin/python3 -m compileall -q -j0 --invalidation-mode unchecked-hash -s "$W/rootfs" -p / \
  rootfs/usr/lib/python3.11 rootfs/usr/lib/python3/dist-packages >/dev/null || true
for m in drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci \
         fs/netfs/netfs fs/fscache/fscache net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p; do
  install -D -m644 kpkg/lib/modules/$KVER/kernel/$m.ko rootfs/lib/modules/$KVER/kernel/$m.ko
done
mkdir -p rootfs/usr/local/bin
# the known-count loop, static (the tests find it as /usr/local/bin/tiptop-kloop in the guest)
aarch64-linux-gnu-gcc -O2 -static -o rootfs/usr/local/bin/tiptop-kloop "$HERE/kloop.c"
install -m755 "$HERE/guest-init.sh" rootfs/init
mkdir -p rootfs/{proc,sys,dev,tmp,ctl,root,run}
[ -e rootfs/bin/sh ] || ln -s busybox rootfs/bin/sh
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/sh' > rootfs/etc/passwd
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' > rootfs/etc/group
rm -rf rootfs/usr/share/doc rootfs/usr/share/man rootfs/usr/share/locale rootfs/var/cache/apt
mksquashfs rootfs rootfs.sqfs -comp lz4 -noappend -quiet -no-progress

# 3. stage-1 initramfs: mounts rootfs.sqfs (virtio-blk) under a tmpfs overlay, then switch_root
mkdir -p stage1/bin
cp rootfs/bin/busybox stage1/bin/busybox
for m in drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci \
         drivers/block/virtio_blk fs/squashfs/squashfs fs/overlayfs/overlay; do
  install -D -m644 kpkg/lib/modules/$KVER/kernel/$m.ko stage1/lib/modules/$KVER/kernel/$m.ko
done
install -m755 "$HERE/stage1-init.sh" stage1/init
(cd stage1 && find . | cpio -o -H newc --quiet | gzip -1) > stage1.cpio.gz

mv rootfs.sqfs stage1.cpio.gz "$OUT/"
cp kpkg/boot/vmlinuz-"$KVER" "$OUT/vmlinuz"
echo "$KVER" > "$OUT/kver"
du -sh "$OUT/rootfs.sqfs" "$OUT/stage1.cpio.gz" "$OUT/vmlinuz" | sed 's/^/build-image: /'
