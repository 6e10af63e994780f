#!/bin/bash
# boot-lab.sh: boots a qemu guest (Debian's own kernel, TCG) whose root is the host's root
# read-only over 9p, with two emulated LE controllers (hci_vhci + btvirt) and a real bluetoothd,
# then runs a command in it. enagent's lab (make lab) runs its agents this way.
#
# Adapted from the team's lab recipe (shared/lab/run-bt-lab.sh); see its notes on the gotchas:
# AF_ALG modules before btvirt, no KVM on these hosts, RSSI always 127, reports only sent when
# advertising or scanning is (re)enabled.
#
# Usage: lab/boot-lab.sh 'command in the guest'      (exit status: the command's)
#        SYSTEMD_UNITS=DIR lab/boot-lab.sh   (systemd as PID 1 starts DIR's units instead: lab/service-lab.sh)
#        lab/boot-lab.sh --prepare           (the packages and the guest kernel only, which need the
#                                             network: lab/rootcanal/guest.sh, before its namespace)
# Env:   LAB (default /tmp/enagent-lab) QEMU_TIMEOUT (600) MEM SMP BTVIRT_OPTS NCTRL (0: no btvirt) RW_DIRS SKIP_APT
#        BTMON_DRAIN: seconds the guest waits at most for btmon to write what it read behind (120)
#        QEMU_EXTRA: more qemu arguments, split on spaces (lab/rootcanal/guest.sh: a serial port to RootCanal)
#        ARCH, GUEST_ROOT, KERNEL_DEB, KERNEL_MODULES: another system's guest (make lab-arm64, and the trixie stack of make lab-test):
#        its root (a directory, instead of the host's /), its kernel package (instead of the host's
#        apt's) and modules built for that kernel (.ko files) that its package lacks
set -euo pipefail
LAB=${LAB:-/tmp/enagent-lab}
ORIG_PWD=$PWD
HERE=$(cd "$(dirname "$0")" && pwd)
# The guest is the host's architecture and boots the host's root, unless ARCH and GUEST_ROOT name
# another (a trixie root made by lab/trixie-guest.sh): Debian's kernel package, qemu and its serial
# console for that architecture. arm64 is a Pi 3's or Zero 2 W's core, the Cortex-A53 (qemu's
# default, max, has SVE, which OpenSSL picks and qemu emulates slowly).
ARCH=${ARCH:-$(dpkg --print-architecture)}
GUEST_ROOT=${GUEST_ROOT:-/}
case $ARCH in
  amd64) QEMU_PACKAGE=qemu-system-x86 QEMU=(qemu-system-x86_64) CONSOLE=ttyS0 ;;
  arm64) QEMU_PACKAGE=qemu-system-arm QEMU=(qemu-system-aarch64 -M virt -cpu cortex-a53) CONSOLE=ttyAMA0 ;;
  *) echo "boot-lab: no guest recipe for $ARCH (amd64 and arm64 have one)" >&2; exit 70 ;;
esac
mkdir -p "$LAB"; cd "$LAB"
T_START=$(date +%s)
log() { echo "[boot-lab +$(( $(date +%s) - T_START ))s] $*"; }

# ---------------------------------------------------------------- 1. packages (Debian 12 bookworm)
# (as root or through sudo, only what is missing: the project's scripts/install-deps.sh)
if [ -z "${SKIP_APT:-}" ]; then
  log "installing missing packages"
  "$HERE/../scripts/install-deps.sh" $QEMU_PACKAGE bluez bluez-test-tools python3 python3-dbus python3-gi python3-cryptography \
    busybox-static kmod cpio zstd > "$LAB/apt.log" 2>&1 || { tail -20 "$LAB/apt.log"; exit 1; }
fi

# ---------------------------------------------------------------- 2. guest kernel: Debian's linux-image-$ARCH, extracted (not installed)
# The cache counts only once it is whole (kernel image, modules.dep, the marker written last): a run
# stopped half-way (depmod missing, disk full) must not leave a kernel that boots with no Bluetooth.
# The marker names the package and the added modules, so that others are extracted anew.
# Without KERNEL_DEB the kernel is the one linux-image-$ARCH depends on in the host's apt (Debian
# 12's): a LAB whose cache another stack's run left (RC_STACK=trixie's 6.12) extracts it anew, where
# it booted trixie's kernel under Debian 12's stack (2026-11-30).
kernel_marker() { dpkg-deb -f "$1" Package Version; echo "modules: ${KERNEL_MODULES:-}"; }
hosts_kernel() { apt-cache depends "linux-image-$ARCH" 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}'; }
if [ ! -e "$LAB/kernel/.complete" ] || { [ -n "${KERNEL_DEB:-}" ] && [ "$(cat "$LAB/kernel/.complete")" != "$(kernel_marker "$KERNEL_DEB")" ]; } \
   || { [ -z "${KERNEL_DEB:-}" ] && [ -n "$(hosts_kernel)" ] && [ "$(sed -n 1p "$LAB/kernel/.complete")" != "Package: $(hosts_kernel)" ]; }; then
  rm -rf "$LAB/kernel" "$LAB/kernel.partial" "$LAB"/initrd-*.cpio.gz
  if [ -n "${KERNEL_DEB:-}" ]; then
    DEB=$KERNEL_DEB
  else
    log "downloading linux-image-$ARCH"
    if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial)" ]; then
      if [ "$(id -u)" = 0 ]; then apt-get update; else sudo apt-get update; fi
    fi
    PKG=$(hosts_kernel)
    [ -n "$PKG" ] || { echo "boot-lab: apt-cache names no linux-image package for linux-image-$ARCH (run apt-get update)" >&2; exit 70; }
    mkdir -p "$LAB/debs" && (cd "$LAB/debs" && apt-get download "$PKG" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
    DEB=$(ls "$LAB"/debs/"$PKG"_*.deb)
  fi
  log "extracting $(basename "$DEB")"
  mkdir -p "$LAB/kernel.partial"
  dpkg-deb -x "$DEB" "$LAB/kernel.partial" || { echo "boot-lab: cannot unpack $DEB" >&2; exit 70; }
  # trixie's kernel packages ship merged-/usr paths (usr/lib/modules): the modules go to lib/modules,
  # where this host's depmod -b and the guest's modprobe -d look, with usr/lib/modules linked to them.
  if [ -d "$LAB/kernel.partial/usr/lib/modules" ] && [ ! -e "$LAB/kernel.partial/lib/modules" ]; then
    mkdir -p "$LAB/kernel.partial/lib" && mv "$LAB/kernel.partial/usr/lib/modules" "$LAB/kernel.partial/lib/"
    ln -s ../../lib/modules "$LAB/kernel.partial/usr/lib/modules"
  fi
  KV=$(ls "$LAB/kernel.partial/lib/modules" | head -1)
  if [ -n "${KERNEL_MODULES:-}" ]; then mkdir -p "$LAB/kernel.partial/lib/modules/$KV/extra" && cp $KERNEL_MODULES "$LAB/kernel.partial/lib/modules/$KV/extra/"; fi
  depmod -b "$LAB/kernel.partial" "$KV" || { echo "boot-lab: depmod failed for the guest kernel $KV (is kmod installed?)" >&2; exit 70; }
  [ -s "$LAB/kernel.partial/lib/modules/$KV/modules.dep" ] || { echo "boot-lab: depmod wrote no modules.dep for $KV" >&2; exit 70; }
  # amd64: the uncompressed ELF vmlinux (PVH entry): qemu boots it directly, skipping SeaBIOS +
  # in-guest decompression (~4 s under TCG). Debian 12's bzImage carries it xz-compressed, trixie's
  # zstd-compressed (zstd -d stops at the size the kernel appends, after the frame). arm64's qemu
  # boots the packaged (gzip) Image as it is.
  [ "$ARCH" = amd64 ] && python3 - "$LAB/kernel.partial/boot/vmlinuz-$KV" "$LAB/kernel.partial/vmlinux" <<'PY' || rm -f "$LAB/kernel.partial/vmlinux"
import lzma, subprocess, sys
d = open(sys.argv[1], 'rb').read()
xz, zstd = d.find(b'\xfd7zXZ\x00'), d.find(b'\x28\xb5\x2f\xfd')
if xz > 0:
    elf = lzma.LZMADecompressor().decompress(d[xz:])
else:
    assert zstd > 0, "the bzImage payload is neither xz nor zstd"
    elf = subprocess.run(["zstd", "-dcq"], input=d[zstd:], capture_output=True).stdout
assert elf[:4] == b'\x7fELF', "the bzImage payload is no ELF kernel"
open(sys.argv[2], 'wb').write(elf)
PY
  kernel_marker "$DEB" > "$LAB/kernel.partial/.complete"
  mv "$LAB/kernel.partial" "$LAB/kernel"
fi
[ "${1:-}" != --prepare ] || exit 0
KVER=$(ls "$LAB/kernel/lib/modules" | head -1)
KIMG=$LAB/kernel/vmlinux; [ -s "$KIMG" ] || KIMG=$LAB/kernel/boot/vmlinuz-$KVER

# ---------------------------------------------------------------- 3. initramfs: busybox + virtio/9p modules, switch_root into host /
cat > "$LAB/initrd-init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p overlay; do
  [ -e /mods/$m.ko ] && { insmod /mods/$m.ko || echo "initrd: insmod $m failed"; }
done
i=0; until mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro hostroot /lower; do
  i=$((i+1)); [ $i -gt 50 ] && { echo "initrd: cannot mount 9p root"; poweroff -f; }; sleep 0.1; done
# writable root: overlay of the read-only host / (9p) and a tmpfs (guest writes are thrown away at power-off)
mount -t tmpfs -o mode=755 tmpfs /upper && mkdir -p /upper/u /upper/w
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w /newroot \
  || { echo "initrd: overlay failed, using read-only 9p root"; mount --move /lower /newroot; }
GINIT=$(sed -n 's/.*btlab.init=\([^ ]*\).*/\1/p' /proc/cmdline)
# A guest root that is not the host's (btlab.lab=LAB) has no view of the lab directory: the lab
# share is mounted there now, for the units and init scripts it holds.
LABDIR=$(sed -n 's/.*btlab.lab=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$LABDIR" ]; then
  mkdir -p /newroot$LABDIR && mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 lab /newroot$LABDIR \
    || echo "initrd: cannot mount the lab share at $LABDIR"
fi
# systemd as PID 1 (SYSTEMD_UNITS): the lab's units join multi-user.target; host units with no
# business in the guest are masked, and so are the rule that empties /tmp at boot and trixie's
# tmpfs on /tmp, which would take the lab directory (and a project cloned under /tmp) with them.
UNITS=$(sed -n 's/.*btlab.units=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$UNITS" ]; then
  mkdir -p /newroot/etc/systemd/system/multi-user.target.wants /newroot/etc/tmpfiles.d
  for unit in /newroot$UNITS/*.service; do
    cp $unit /newroot/etc/systemd/system/
    ln -sf /etc/systemd/system/${unit##*/} /newroot/etc/systemd/system/multi-user.target.wants/
  done
  for masked in postgresql.service getty@tty1.service serial-getty@ttyS0.service serial-getty@ttyAMA0.service systemd-timesyncd.service e2scrub_reap.service \
      apt-daily.timer apt-daily-upgrade.timer man-db.timer fstrim.timer logrotate.timer tmp.mount; do
    ln -sf /dev/null /newroot/etc/systemd/system/$masked
  done
  ln -sf /dev/null /newroot/etc/tmpfiles.d/tmp.conf
  # A container's marks on the host's root: systemd would take the guest for a container (and
  # ignore the kernel's command line), and dpkg would start no service.
  rm -f /newroot/.dockerenv /newroot/usr/sbin/policy-rc.d
fi
umount /proc /sys /dev 2>/dev/null
exec switch_root /newroot ${GINIT:-/bin/sh}
INIT
# Named by its init and by this script (which picks its modules), so that a cached initramfs from
# an older recipe is not booted.
INITRD=$LAB/initrd-$(cat "$LAB/initrd-init" "$HERE/boot-lab.sh" | sha256sum | cut -c1-12).cpio.gz
if [ ! -f "$INITRD" ]; then
  log "building initramfs"
  W=$(mktemp -d)
  mkdir -p $W/bin $W/dev $W/proc $W/sys $W/newroot $W/lower $W/upper $W/mods
  cp "$GUEST_ROOT/bin/busybox" $W/bin/busybox  # the guest's architecture's
  for a in sh mount umount insmod switch_root echo cat sed mkdir sleep poweroff; do ln -s busybox $W/bin/$a; done
  M=$LAB/kernel/lib/modules/$KVER/kernel
  for m in drivers/virtio/virtio_ring.ko drivers/virtio/virtio.ko drivers/virtio/virtio_pci_legacy_dev.ko \
           drivers/virtio/virtio_pci_modern_dev.ko drivers/virtio/virtio_pci.ko \
           fs/netfs/netfs.ko fs/fscache/fscache.ko net/9p/9pnet.ko net/9p/9pnet_virtio.ko fs/9p/9p.ko fs/overlayfs/overlay.ko; do
    # a driver built into the kernel has no module; trixie's are xz-compressed, which busybox's insmod cannot read
    if [ -e $M/$m ]; then cp $M/$m $W/mods/; elif [ -e $M/$m.xz ]; then xz -dc $M/$m.xz > $W/mods/${m##*/}; fi
  done
  cp "$LAB/initrd-init" $W/init; chmod +x $W/init
  (cd $W && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD.new"
  mv "$INITRD.new" "$INITRD"
  rm -rf $W
fi

# ---------------------------------------------------------------- 4. guest-side files
# kernel module helper: the guest's modules live in $LAB/kernel, not in /lib/modules of the (read-only) host root
cat > "$LAB/modprobe.sh" <<EOF
#!/bin/sh
exec /sbin/modprobe -d $LAB/kernel "\$@"
EOF
chmod +x "$LAB/modprobe.sh"

cat > "$LAB/guest-init.sh" <<'EOF'
#!/bin/sh
# PID 1 inside the guest. / = overlay(host / read-only via 9p tag "hostroot", tmpfs); $LAB (this script's dir) is
# the read-write 9p share "lab"; RW_DIRS are "rw0", "rw1", ... mounted at their host paths.
LAB=$(dirname "$0")
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
up() { cut -d' ' -f1 /proc/uptime; }
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm
# fresh /run and BlueZ state; /tmp etc. only need a tmpfs if the root is not the writable overlay
for d in /run /var/lib/bluetooth; do mount -t tmpfs tmpfs $d; done
touch /.btlab-rw 2>/dev/null || for d in /tmp /var/tmp /root; do mount -t tmpfs tmpfs $d; done
chmod 700 /var/lib/bluetooth
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# A guest root other than the host's has the share mounted by the initramfs already (btlab.lab).
mkdir -p $LAB 2>/dev/null
grep -q "^lab $LAB 9p " /proc/mounts || mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 lab $LAB \
  || { echo "GUEST: cannot mount lab share"; busybox poweroff -f; }
i=0; for d in $(echo "$BTLAB_RW" | tr ':' ' '); do
  mkdir -p $d 2>/dev/null; mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 rw$i $d || echo "GUEST: cannot mount $d"; i=$((i+1)); done
OUT=$LAB/out; mkdir -p $OUT
echo "GUEST: kernel $(uname -r) up at $(up)s"
busybox ifconfig lo 127.0.0.1 up; busybox hostname btlab-guest

echo $LAB/modprobe.sh > /proc/sys/kernel/modprobe      # kernel auto-loading (crypto-stdrng, net-pf-31, ...)
$LAB/modprobe.sh -a drbg jitterentropy_rng af_alg algif_hash algif_skcipher cmac ecb bluetooth hci_vhci || echo "GUEST: modprobe failed"
# btvirt needs AF_ALG ecb(aes)/cmac(aes); instantiate them first so btvirt does not stall in request_module() while the
# kernel is already waiting (2 s) for HCI_Reset on its first controller ("hci0: Opcode 0x0c03 failed: -110").
python3 -c '
import socket
for t, n in (("skcipher", "ecb(aes)"), ("hash", "cmac(aes)")):
    s = socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET); s.bind((t, n)); s.close()' || echo "GUEST: AF_ALG warm-up failed"
echo "GUEST: modules loaded at $(up)s"

mkdir -p /run/dbus
dbus-daemon --system --fork --nopidfile || echo "GUEST: dbus-daemon failed"
# One trace, as btsnoop on the guest's tmpfs (a write per packet to the 9p share was slow enough
# to lose packets in bursts); the text trace is decoded from it at the end. The lab's scripts read
# the live capture ($BTSNOOP) for the controllers' state.
export BTSNOOP=/run/btmon.snoop
# btmon's socket hears a copy of each event per management socket; in bursts the kernel dropped
# what did not fit its default buffer, without a word: a larger one for btmon alone.
rmem=$(cat /proc/sys/net/core/rmem_default); echo 33554432 > /proc/sys/net/core/rmem_default
btmon -w $BTSNOOP > /dev/null 2>&1 & BTMON=$!
for i in $(seq 100); do ls -l /proc/$BTMON/fd 2>/dev/null | grep -q socket: && break; sleep 0.05; done; echo $rmem > /proc/sys/net/core/rmem_default
BTCONF=/etc/bluetooth/main.conf; [ -f $LAB/main.conf ] && BTCONF=$LAB/main.conf
/usr/libexec/bluetooth/bluetoothd -n -d -f $BTCONF ${BLUETOOTHD_EXTRA} > $OUT/bluetoothd.log 2>&1 &
objs() { dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects 2>/dev/null; }
n_adapters() { objs | grep -cE 'object path "/org/bluez/hci[0-9]+"$'; }
for i in $(seq 50); do objs >/dev/null && break; sleep 0.2; done
echo "GUEST: dbus-daemon + bluetoothd up at $(up)s"
NCTRL=${NCTRL:-2}
# NCTRL=0: no btvirt, no emulated controller; the payload brings its own (lab/rootcanal: RootCanal's).
[ "$NCTRL" = 0 ] || for attempt in 1 2 3; do
  btvirt ${BTVIRT_OPTS:--l2} > $OUT/btvirt.log 2>&1 & BTVIRT=$!
  for i in $(seq 75); do [ "$(n_adapters)" -ge $NCTRL ] && break; sleep 0.2; done
  [ "$(n_adapters)" -ge $NCTRL ] && break
  echo "GUEST: btvirt attempt $attempt: only $(n_adapters)/$NCTRL adapters reached bluetoothd, restarting btvirt"
  kill $BTVIRT; wait $BTVIRT; sleep 1
done
echo "GUEST: $(n_adapters) adapters on D-Bus ($(ls /sys/class/bluetooth | tr '\n' ' ')) at $(up)s"
if [ "$(n_adapters)" -lt $NCTRL ]; then
  # A payload without its radios would only report that nothing was seen: stop with the reason.
  echo "GUEST: FAILED: $(n_adapters) of $NCTRL emulated adapters came up (btvirt.log: $(tail -1 $OUT/btvirt.log)); not running the payload"
  kill $BTMON 2>/dev/null; cp $BTSNOOP $OUT/btmon.snoop; echo 69 > $OUT/rc; sync; busybox poweroff -f
fi

$LAB/guest-payload.sh; RC=$?
echo "GUEST: payload rc=$RC at $(up)s"
# btmon reads behind in a crowd (the flood's 147 s, the RootCanal crowd's 200 s): what its socket
# still holds is written before it stops, until the capture stops growing (at most BTMON_DRAIN s).
size=-1; for i in $(seq ${BTMON_DRAIN:-120}); do now=$(stat -c %s $BTSNOOP); [ "$now" = "$size" ] && break; size=$now; sleep 1; done
echo "GUEST: btmon's capture $(stat -c %s $BTSNOOP) bytes at $(up)s"
kill $BTMON 2>/dev/null; sleep 0.3
cp $BTSNOOP $OUT/btmon.snoop
echo $RC > $OUT/rc
sync
busybox poweroff -f
EOF
chmod +x "$LAB/guest-init.sh"

# the payload: a command for guest-init.sh, or (SYSTEMD_UNITS) units that systemd starts, one of
# which writes $LAB/out/rc and powers the guest off
if [ -n "${SYSTEMD_UNITS:-}" ]; then
  ls "$SYSTEMD_UNITS"/*.service > /dev/null || { echo "boot-lab: no units in SYSTEMD_UNITS=$SYSTEMD_UNITS" >&2; exit 64; }
else
  [ $# -gt 0 ] || { echo "usage: $0 'command to run in the guest'" >&2; exit 64; }
  printf '#!/bin/sh\ncd %q\n%s\n' "$ORIG_PWD" "$*" > "$LAB/guest-payload.sh"; chmod +x "$LAB/guest-payload.sh"
fi

# ---------------------------------------------------------------- 5. boot
RWARGS=(); RWLIST=""; i=0
for d in ${RW_DIRS:-}; do
  RWARGS+=(-fsdev "local,id=rw$i,path=$d,security_model=none,multidevs=remap" -device "virtio-9p-pci,fsdev=rw$i,mount_tag=rw$i")
  RWLIST="${RWLIST:+$RWLIST:}$d"; i=$((i+1))
done
[ "$GUEST_ROOT" = / ] || BTLAB_LAB="btlab.lab=$LAB"
CMDLINE="console=$CONSOLE quiet panic=-1 ${BTLAB_LAB:-} btlab.init=$LAB/guest-init.sh BTVIRT_OPTS=${BTVIRT_OPTS:--l2} NCTRL=${NCTRL:-2} BTMON_DRAIN=${BTMON_DRAIN:-120}"
[ -n "${SYSTEMD_UNITS:-}" ] && CMDLINE="console=$CONSOLE quiet panic=-1 ${BTLAB_LAB:-} btlab.init=/lib/systemd/systemd btlab.units=$SYSTEMD_UNITS systemd.unit=multi-user.target systemd.show_status=error"
[ -n "${BLUETOOTHD_EXTRA:-}" ] && CMDLINE="$CMDLINE BLUETOOTHD_EXTRA=$BLUETOOTHD_EXTRA"
[ -n "$RWLIST" ] && CMDLINE="$CMDLINE BTLAB_RW=$RWLIST"
# A kernel that panics before anything in the guest ran (nothing written to out/ but the console)
# is booted once more: under multi-threaded TCG, trixie's 6.12 once took an int3 it had just
# patched away (a static key in sched_clock_cpu, 2.4 s into the boot, while make test loaded both
# host cores). No code of enagent's or BlueZ's had run; any later failure still counts.
# How loaded the host is while the guest runs (the reports print it: labframe.py): the load average
# every 5 s, kept beside out/ until the guest is done, then moved in.
( while :; do echo "$(date +%s) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 5; done ) > "$LAB/host-load" & LOAD_SAMPLER=$!
trap 'kill "$LOAD_SAMPLER" 2>/dev/null || true' EXIT
for boot in 1 2; do
rm -rf "$LAB/out"; mkdir -p "$LAB/out"
log "booting $KVER ($(basename $KIMG)) under qemu (${ACCEL:-tcg})"
set +e
timeout "${QEMU_TIMEOUT:-600}" "${QEMU[@]}" -accel "${ACCEL:-tcg}" -m "${MEM:-1024}" -smp "${SMP:-2}" \
  -kernel "$KIMG" -initrd "$INITRD" -append "$CMDLINE" \
  -nographic -no-reboot -nic none \
  -fsdev local,id=root,path=$GUEST_ROOT,security_model=none,readonly=on,multidevs=remap -device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
  -fsdev "local,id=lab,path=$LAB,security_model=none,multidevs=remap" -device virtio-9p-pci,fsdev=lab,mount_tag=lab \
  "${RWARGS[@]}" ${QEMU_EXTRA:-} < /dev/null 2>&1 | tee "$LAB/out/console.log" | tr -d '\r' | sed -u 's/^.*Booting from ROM\.*//' | grep -v -e '^\s*$' -e 'SeaBIOS'
QRC=${PIPESTATUS[0]}
set -e
RC=$(cat "$LAB/out/rc" 2>/dev/null || echo 99)
[ "$RC" = 99 ] && [ "$boot" = 1 ] && grep -q 'Kernel panic' "$LAB/out/console.log" && [ "$(ls "$LAB/out")" = console.log ] || break
log "the guest's kernel panicked before its init ran (console.log: $(grep -m1 -o -e 'Oops.*' -e 'Kernel panic.*' "$LAB/out/console.log" | tr -d '\r')); booting it again"
cp "$LAB/out/console.log" "$LAB/console-panic-$(date +%s).log"
done
kill "$LOAD_SAMPLER"; mv "$LAB/host-load" "$LAB/out/host-load"
# The text trace, decoded on the host (quicker than in the emulated guest).
[ -s "$LAB/out/btmon.snoop" ] && btmon -t -r "$LAB/out/btmon.snoop" > "$LAB/out/btmon.txt" 2>&1
log "qemu exit $QRC, guest payload rc=$RC (logs: $LAB/out: console.log bluetoothd.log btmon.txt btvirt.log)"
case $RC in
  69) log "FAILED: the guest's emulated Bluetooth adapters did not come up; the payload did not run" ;;
  99) log "FAILED: the guest ended without a payload result (qemu exit $QRC; 124 means QEMU_TIMEOUT ran out)" ;;
esac
exit "$RC"
