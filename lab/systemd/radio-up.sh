#!/bin/sh
# In the guest, before bluetooth.service: the read-write lab share over the host's read-only view
# of it, the guest kernel's modules (lab/boot-lab.sh's modprobe.sh), and AF_ALG's ecb(aes) and
# cmac(aes) instantiated before btvirt needs them (as lab/boot-lab.sh's busybox init does).
LAB=@LAB@
# (already there when the guest's root is not the host's: the initramfs mounted it)
mountpoint -q $LAB || mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 lab $LAB || echo "radio-up: cannot mount the lab share"
mkdir -p $LAB/out
echo $LAB/modprobe.sh > /proc/sys/kernel/modprobe
$LAB/modprobe.sh -a drbg jitterentropy_rng af_alg algif_hash algif_skcipher cmac ecb bluetooth hci_vhci || echo "radio-up: modprobe failed"
/usr/bin/python3 -c '
import socket
for t, n in (("skcipher", "ecb(aes)"), ("hash", "cmac(aes)")):
    s = socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET); s.bind((t, n)); s.close()' || echo "radio-up: AF_ALG warm-up failed"
