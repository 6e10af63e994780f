# attach.sh: sourced in the lab's guest (guest-payload.sh, crowd-agents.sh). attach_controller RUN
# TTY LOG attaches TTY, qemu's end of RootCanal's HCI port (guest.sh), as an HCI controller
# (`btattach -N -P h4`, its output in LOG) and waits for the kernel's new hciN and bluetoothd's
# offer of it; RUN is boot-lab.sh's LAB folder (its modprobe.sh). It sets ATTACHED to hciN, or
# says why not and returns 1. The kernel names controllers in the order they come: attached one
# after the other, the first is the lowest free hciN.
attach_controller() {
    attach_run=$1 attach_tty=$2 attach_log=$3 ATTACHED=
    "$attach_run/modprobe.sh" hci_uart || echo "GUEST: modprobe hci_uart failed"
    case $attach_tty in hvc*) "$attach_run/modprobe.sh" virtio_console || echo "GUEST: modprobe virtio_console failed"
      for i in $(seq 50); do [ -e "/dev/$attach_tty" ] && break; sleep 0.1; done ;; esac
    attach_before=$(ls /sys/class/bluetooth | grep -c '^hci[0-9]*$')
    echo "GUEST: $attach_before controller(s) before btattach of $attach_tty at $(cut -d' ' -f1 /proc/uptime)s"
    btattach -N -P h4 -B "/dev/$attach_tty" > "$attach_log" 2>&1 &
    for i in $(seq 100); do
      if [ "$(ls /sys/class/bluetooth | grep -c '^hci[0-9]*$')" -gt "$attach_before" ]; then
        ATTACHED=$(ls /sys/class/bluetooth | grep '^hci[0-9]*$' | sort -V | tail -1); break
      fi
      sleep 0.2
    done
    [ -n "$ATTACHED" ] || { echo "GUEST: FAILED: no controller from btattach of $attach_tty ($attach_log: $(cat "$attach_log"))"; return 1; }
    echo "GUEST: btattach made $ATTACHED of $attach_tty at $(cut -d' ' -f1 /proc/uptime)s"
    for i in $(seq 100); do attach_offered && break; sleep 0.2; done
    attach_offered && echo "GUEST: bluetoothd offers /org/bluez/$ATTACHED at $(cut -d' ' -f1 /proc/uptime)s" \
      || { echo "GUEST: FAILED: bluetoothd does not offer $ATTACHED"; return 1; }
}
attach_offered() {
    dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects 2>/dev/null \
      | grep -q "object path \"/org/bluez/$ATTACHED\""
}
