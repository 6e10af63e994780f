#!/bin/sh
# guest-payload.sh LAB SECONDS TTY: in the lab's guest (guest.sh), attaches TTY (RootCanal) as an HCI
# controller, shows bluetoothd offering it, and runs an LE discovery on it for SECONDS.
LAB=$1; SECONDS_=${2:-10}; TTY=${3:-ttyS1}; OUT=$LAB/out
up() { cut -d' ' -f1 /proc/uptime; }
. "$(dirname "$0")/attach.sh"
attach_controller "$LAB" "$TTY" "$OUT/btattach.log" || exit 1
new=$ATTACHED index=${ATTACHED#hci}
btmgmt --index $index info | tee $OUT/btmgmt-info.txt
bluetoothctl show $(cat /sys/class/bluetooth/$new/address 2>/dev/null || true) > $OUT/bluetoothctl-show.txt 2>&1
grep -E "Name|Powered|Roles|Modalias|Controller" $OUT/bluetoothctl-show.txt | head
btmgmt --index $index power on
echo "GUEST: LE discovery on $new for ${SECONDS_}s at $(up)s"
timeout $SECONDS_ btmgmt --index $index find -l > $OUT/find.txt 2>&1
echo "GUEST: discovery done at $(up)s: $(grep -c 'dev_found' $OUT/find.txt) device-found events, $(grep 'dev_found' $OUT/find.txt | awk '{print $3}' | sort -u | wc -l) addresses"
grep 'dev_found' $OUT/find.txt | head -5
grep -o 'rssi -*[0-9]*' $OUT/find.txt | sort | uniq -c | sort -rn | head -5
# The controller without the kernel's duplicate filter: raw HCI, the kernel's discovery stopped.
echo "GUEST: raw passive scans on $new (filter off, then on), 5 s each, at $(up)s"
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }
b0=$(busy)
python3 $(dirname "$0")/guest-scan.py $new 5 | tee $OUT/guest-scan.jsonl
b1=$(busy)
echo "$b0 $b1" | awk '{printf "GUEST: CPU busy during the raw scans: %.0f %% of the guest'"'"'s %d CPUs\n", 100*($3-$1)/($4-$2), '"$(nproc)"'}' 
# The kernel's own advertising set on RootCanal: what TX power the controller says it selected.
btmgmt --index $index add-adv -d 03036ffd 1 > $OUT/add-adv.txt 2>&1
sleep 1
echo "GUEST: btmgmt add-adv on $new: $(tail -1 $OUT/add-adv.txt)"
echo "GUEST: the host's phones (rclab.py serve: $LAB/rootcanal/phones.jsonl) and their reports are compared on the host"
