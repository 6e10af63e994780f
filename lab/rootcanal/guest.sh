#!/bin/bash
# guest.sh: a RootCanal controller in the lab's qemu guest (Debian 12, lab/boot-lab.sh), beside
# btvirt's: RootCanal and Bumble's phones run on the host (rclab.py serve), qemu connects a serial
# port (a virtio console, hvc0, or a second 16550, ttyS1) to RootCanal's HCI port, and the guest
# attaches it with `btattach -N -P h4 -B /dev/hvc0` (or /dev/ttyS1). guest-payload.sh then shows the new hciN to bluetoothd and
# scans with it. No lab kind changes: this is a run of its own, in a LAB folder of its own.
#
# Everything runs in one network namespace (run.sh --shell): qemu's socket to RootCanal needs the
# loopback's quickack route too (RootCanal's H4 writes and Nagle: run.sh).
#
# Usage: lab/rootcanal/guest.sh            (about 2 minutes; records in $LAB/out)
#        lab/rootcanal/guest.sh 'COMMAND'  (COMMAND in the guest instead of guest-payload.sh, with
#                                           the consoles' names as its last arguments: make lab-rootcanal-crowd)
# Env:   LAB (default /tmp/enagent-lab-rootcanal), CROWD (phones beyond the three: 0), ROTATE (each
#        phone's seconds between rotations, S or SHORTEST-LONGEST: 8), SCAN_SECONDS (10),
#        RC_SERIAL (virtio: hvc0, or isa: ttyS1), RC_PORTS (virtio consoles to RootCanal, hvc0...: 1),
#        NCTRL and BTVIRT_OPTS (btvirt's controllers beside them: 1, -l1; NCTRL=0 none),
#        LEAVE_AFTER (a phase of the guest's manifest after which the phones leave the air),
#        FLOOD_AFTER and FLOOD_ROTATE (a phase after which the phones rotate every FLOOD_ROTATE s)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export LAB=${LAB:-/tmp/enagent-lab-rootcanal}
# The packages and the guest kernel first: the namespace has no network to download them.
if [ -z "${RC_IN_NETNS:-}" ]; then "$HERE/../boot-lab.sh" --prepare; exec "$HERE/run.sh" --shell "$0" "$@"; fi
VENV=$("$HERE/setup.sh")
# The guest's manifest: a run's lab agents write their clock there (its phase "clock"), which the
# phones then count their intervals by, so that the agents can detect their keys.
rm -f "$LAB/out/phases.jsonl"
"$VENV/bin/python" "$HERE/rclab.py" serve --out "$LAB/rootcanal" --crowd "${CROWD:-0}" --rotate "${ROTATE:-8}" \
    ${FLOOD_AFTER:+--flood-rotate "${FLOOD_ROTATE:-4-8}"} --agents-clock "$LAB/out/phases.jsonl" > "$LAB/serve.log" 2>&1 &
SERVE=$!
# LEAVE_AFTER=PHASE: the phones leave the air (rclab.py serve's SIGUSR1) once the guest's manifest
# has that phase, so that what comes after it (the agents' stop) does not run under the crowd.
WATCH=
# FLOOD_AFTER=PHASE: the same for the flood (SIGUSR2).
after_phase() {
    while ! grep -qs "\"phase\": \"$1\"" "$LAB/out/phases.jsonl"; do sleep 1; done
    kill -"$2" $SERVE
}
[ -z "${LEAVE_AFTER:-}" ] || { after_phase "$LEAVE_AFTER" USR1 & WATCH=$!; }
FLOOD_WATCH=
[ -z "${FLOOD_AFTER:-}" ] || { after_phase "$FLOOD_AFTER" USR2 & FLOOD_WATCH=$!; }
trap 'kill $SERVE $WATCH $FLOOD_WATCH 2>/dev/null; wait $SERVE 2>/dev/null || true' EXIT
for i in $(seq 100); do grep -q "phones on the air" "$LAB/serve.log" && break; sleep 0.2; done
grep -q "phones on the air" "$LAB/serve.log" || { cat "$LAB/serve.log"; echo "guest.sh: rclab.py serve did not start" >&2; exit 1; }
cat "$LAB/serve.log"
# The guest's end of RootCanal's HCI port (one more controller on RootCanal's air, spoken to in H4):
# RC_SERIAL=virtio (default) a virtio console port, hvc0 (RC_PORTS of them: hvc0, hvc1...; qemu
# connects them in order, so RootCanal numbers their controllers so); RC_SERIAL=isa a second 16550,
# ttyS1, as the issue's manual run had it (ttyS0 is the console; both serial ports are named, since a
# -device isa-serial of its own would take away -nographic's default console). The emulated UART
# carried about 300 reports a second, virtio all of a crowd's 1,200 (docs/lab.md, RootCanal and Bumble).
case ${RC_SERIAL:-virtio} in
  isa) export QEMU_EXTRA="-serial mon:stdio -chardev socket,id=rootcanal,host=127.0.0.1,port=6402,nodelay=on -serial chardev:rootcanal"
       TTYS=" ttyS1" ;;
  virtio) QEMU_EXTRA="-device virtio-serial-pci" TTYS=
       for port in $(seq 0 $(( ${RC_PORTS:-1} - 1 ))); do
         QEMU_EXTRA="$QEMU_EXTRA -chardev socket,id=rootcanal$port,host=127.0.0.1,port=6402,nodelay=on -device virtconsole,chardev=rootcanal$port"
         TTYS="$TTYS hvc$port"
       done
       export QEMU_EXTRA ;;
  *) echo "guest.sh: RC_SERIAL is isa or virtio" >&2; exit 64 ;;
esac
export BTVIRT_OPTS=${BTVIRT_OPTS:--l1} NCTRL=${NCTRL:-1} QEMU_TIMEOUT=${QEMU_TIMEOUT:-300}
cd "$HERE/../.."
"$HERE/../boot-lab.sh" "${1:-sh lab/rootcanal/guest-payload.sh $LAB ${SCAN_SECONDS:-10}}$TTYS"
