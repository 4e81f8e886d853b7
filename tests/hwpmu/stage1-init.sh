#!/bin/busybox sh
# Stage-1 /init (tiny initramfs, from shared/pmu-vm): load virtio-blk + squashfs + overlay, mount the
# rootfs from /dev/vda with a tmpfs overlay on top (writable root), then switch_root into it.
B=/bin/busybox
$B mkdir -p /proc /dev /lower /rw /newroot
$B mount -t proc proc /proc; $B mount -t devtmpfs dev /dev
M=/lib/modules/$($B uname -r)/kernel
for m in drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci \
         drivers/block/virtio_blk fs/squashfs/squashfs fs/overlayfs/overlay; do
  $B insmod $M/$m.ko || echo "stage1: insmod $m failed"
done
i=0; while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do $B sleep 0.05; i=$((i+1)); done
$B mount -t squashfs -o ro /dev/vda /lower || { echo "stage1: cannot mount /dev/vda"; $B sh; }
$B mount -t tmpfs -o size=75% rw /rw; $B mkdir -p /rw/upper /rw/work
$B mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot
$B umount /proc; $B umount /dev
exec $B switch_root /newroot /init
