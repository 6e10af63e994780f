# agent-lib.sh: what the lab's runs (agents.sh, soak.sh, flood.sh, rootcanal/crowd-agents.sh) do with agents, sourced in the guest
# with BIN, OUT and LAB set. It makes a fresh STATE (the agents' state on the guest's tmpfs) with
# the lab's health authority, and the agents' clock: 120 times faster from an origin two agent
# hours (one real minute) before a UTC midnight.
STATE=/run/enagent-lab
NOW=$(date +%s)
START=$(( ((NOW + 7200) / 86400 + 1) * 86400 - 7200 ))
TIME_SCALE=120
ORIGIN=$(( (TIME_SCALE * NOW - START) / (TIME_SCALE - 1) ))
LAB_OPTIONS="--config $LAB/lab.conf --verbose --time-scale $TIME_SCALE --time-origin $ORIGIN"
. "$LAB/manifest.sh"
rm -rf "$STATE"; mkdir -p "$STATE/a" "$STATE/b" "$STATE/server/exposureKeyExport-LAB" "$STATE/trusted-keys"
# The lab's health authority: its signing key, and its public key trusted by the agents (lab.conf).
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$STATE/authority.pem"
openssl ec -in "$STATE/authority.pem" -pubout -out "$STATE/trusted-keys/228_v1.pem" 2>/dev/null

# Both agents share the guest's system bus for BlueZ, but one bus name can have one owner: each
# offers its API on a bus of its own, under the system bus's default policy plus enagentd's.
api_bus() {
    cat > "$STATE/$1.bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$STATE/$1.bus</listen>
  <auth>EXTERNAL</auth>
  <include>$LAB/system-bus-default.conf</include>
  <include>$LAB/../dbus/org.enagent.ExposureNotification1.conf</include>
</busconfig>
EOF
    dbus-daemon --config-file="$STATE/$1.bus.conf" --fork --nopidfile
}
enctl() { agent_name=$1; shift; DBUS_SYSTEM_BUS_ADDRESS="unix:path=$STATE/$agent_name.bus" "$BIN/enctl" "$@"; }
agent() {
    exec "$BIN/enagentd" --state-dir "$STATE/$1" --adapter "$2" --api-bus "unix:path=$STATE/$1.bus" $LAB_OPTIONS \
        >> "$STATE/$1/enagentd.log" 2>&1
}
# sightings AGENT: the sightings AGENT has stored so far, as JSON: [["RPI-hex", seen_at], ...].
sightings() {
    python3 -c 'import json, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(json.dumps([[rpi.lower(), seen] for rpi, seen in db.execute("SELECT hex(rpi), seen_at FROM sighting")]))' "$STATE/$1/enagent.db"
}
# must DESCRIPTION COMMAND...: runs a phase's command; a failure is recorded as the phase
# "failed", which the report turns into a failed check, and the phase goes on so the report can
# say the rest. Its own words go to stderr: a command's output may be the value a phase records.
must() {
    what=$1; shift
    "$@" || { rc=$?; echo "FAILED: $what (exit $rc)" >&2; phase failed step="$what: exit $rc"; return $rc; }
}
# rfkill_agents 1|0: what 'rfkill block bluetooth' (1) and unblock (0) do to the agents' adapters,
# through sysfs (the phones' stay on).
rfkill_agents() { for switch in /sys/class/rfkill/rfkill*; do case "$(cat "$switch/name")" in hci0|hci1) echo "$1" > "$switch/soft";; esac; done; }
# Consent: enabling through the API, as a person would with 'enctl enable'.
enable() {
    for _ in $(seq 50); do enctl "$1" enable > /dev/null 2>&1 && { echo "agent $1 enabled"; return; }; sleep 0.2; done
    echo "agent $1: enctl enable failed"; phase failed step="enctl $1 enable: never succeeded"
}
# The two agents of a run without its other players (flood.sh, rootcanal/crowd-agents.sh): a on
# hci0 and b on hci1, each on its API bus, enabled; their pids in A and B. Beside them, where the
# guest's processor time goes (cpushare.py, every 10 s: the reports print it) until end_run.
start_agents() {
    python3 "$LAB/cpushare.py" "$OUT/cpu.jsonl" 10 & CPU_SAMPLER=$!
    api_bus a; api_bus b
    agent a hci0 & A=$!
    agent b hci1 & B=$!
    enable a; enable b
}
# What each agent says of its scan, every 2 s, with the moment each poll began (the phase
# "status-poll", which the reports hold against the controller's scans): run it in the background.
poll_status() {
    while :; do
        for agent in a b; do
            asked=$(date +%s.%N)
            said=$(enctl $agent status --json 2>/dev/null) && phase status-poll agent=$agent started:="$asked" status:="$said"
        done
        sleep 2
    done
}
# Agent a killed with SIGKILL and started again (its pid in A), its database's snapshot before and
# after: the phases before-kill, a-killed, after-kill and a-restarted.
kill_and_restart_a() {
    phase before-kill snapshot:="$(must "snapshot before-kill" python3 "$LAB/snapshot.py" "$STATE/a/enagent.db")"
    phase a-killed
    kill -KILL "$A"; wait "$A"
    phase after-kill snapshot:="$(must "snapshot after-kill" python3 "$LAB/snapshot.py" "$STATE/a/enagent.db")"
    phase a-restarted
    agent a hci0 & A=$!
}
# Both agents stopped with SIGTERM (and PIDS... with them), each one's exit status in its state.
stop_agents() {
    kill -TERM "$A" "$B" "$@"
    wait "$A"; echo $? > "$STATE/a/exit-status"; echo "agent a stopped: exit $(cat "$STATE/a/exit-status")"
    wait "$B"; echo $? > "$STATE/b/exit-status"; echo "agent b stopped: exit $(cat "$STATE/b/exit-status")"
}
# The end of such a run: each agent's last status, both stopped, whether btmon still records (the
# reports judge scans from its capture) and the kernel's word on memory (in one flood run of
# 2026-11-29 the capture ended 10 s before the flood did), the agents' folders copied to OUT.
end_run() {
    for agent in a b; do phase status-$agent status:="$(must "enctl $agent status" enctl $agent status --json)"; done
    stop_agents
    kill "$CPU_SAMPLER"
    phase end btmon:="$(pgrep -x btmon >/dev/null && echo true || echo false)" free-kib:="$(awk '/MemAvailable/ {print $2}' /proc/meminfo)"
    dmesg > "$OUT/dmesg.txt" 2>&1
    cp -r "$STATE/a" "$STATE/b" "$OUT/"
}
