#!/bin/busybox sh
# /init of the tiptop hwpmu guest (PID 1, after stage 1 switched root to the squashfs+tmpfs overlay).
# Mounts the control share (/ctl, read-write) and the project tree (at its host path, read-only) over 9p,
# sets perf_event_paranoid, runs /ctl/cmd.sh, writes its exit status to /ctl/rc and powers off.
B=/bin/busybox
$B mkdir -p /proc /sys /dev /tmp /ctl /bbin /run
$B --install -s /bbin
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin:/bbin HOME=/root LANG=C.UTF-8 TERM=${TERM:-vt100}
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t tmpfs -o mode=1777 tmp /tmp
mkdir -p /dev/pts; mount -t devpts devpts /dev/pts
M=/lib/modules/$(uname -r)/kernel
for m in drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci \
         fs/netfs/netfs fs/fscache/fscache net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p; do
  insmod $M/$m.ko 2>/dev/null
done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576,cache=loose ctl /ctl || echo "GUEST: mount ctl failed"
if [ -s /ctl/share_path ]; then
  SP=$(cat /ctl/share_path); mkdir -p "$SP"
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576,cache=loose,ro work "$SP" \
    || echo "GUEST: mount work failed"
  cd "$SP"
fi
# Debian's default is 3 (root only); the harness asks for 1 so that uid 65534 may count its own tasks
# (perf_event_open(2), "/proc/sys/kernel/perf_event_paranoid").
[ -f /ctl/paranoid ] && cat /ctl/paranoid > /proc/sys/kernel/perf_event_paranoid
echo "GUEST: ready at uptime $(cut -d' ' -f1 /proc/uptime)s"
sh /ctl/cmd.sh; rc=$?
echo $rc > /ctl/rc
echo "GUEST: exit $rc at uptime $(cut -d' ' -f1 /proc/uptime)s"
sync
poweroff -f
