#!/bin/sh
# agents.sh BIN OUT SECONDS: in the lab guest, runs enagentd on hci0 (agent a) and on hci1
# (agent b) for SECONDS, then stops both with SIGTERM. Their clocks run 60 times faster, so an EN
# interval lasts 10 s and every rotation (11-14 s apart) brings a new RPI, as in real use.
# Each agent keeps its state on the guest's tmpfs (SQLite's WAL needs shared memory, which the 9p
# share lacks); once stopped, its database and log are copied to OUT/a and OUT/b.
set -u
BIN=$1 OUT=$2 SECONDS_TO_RUN=${3:-60}
STATE=/run/enagent-lab
LAB_OPTIONS="--power-on --verbose --tx-power -4 --time-scale 60 --rotation-seconds 11-14 --scan-seconds 3 --scan-interval-seconds 4"
rm -rf "$OUT/a" "$OUT/b" "$STATE"; mkdir -p "$STATE/a" "$STATE/b"
"$BIN/enagentd" --state-dir "$STATE/a" --adapter hci0 $LAB_OPTIONS > "$STATE/a/enagentd.log" 2>&1 & A=$!
"$BIN/enagentd" --state-dir "$STATE/b" --adapter hci1 $LAB_OPTIONS > "$STATE/b/enagentd.log" 2>&1 & B=$!
echo "agents: a (hci0) pid $A, b (hci1) pid $B; running ${SECONDS_TO_RUN}s"
sleep "$SECONDS_TO_RUN"
kill -TERM "$A" "$B"
wait "$A"; echo $? > "$STATE/a/exit-status"; echo "agent a stopped: exit $(cat "$STATE/a/exit-status")"
wait "$B"; echo $? > "$STATE/b/exit-status"; echo "agent b stopped: exit $(cat "$STATE/b/exit-status")"
cp -r "$STATE/a" "$STATE/b" "$OUT/"
