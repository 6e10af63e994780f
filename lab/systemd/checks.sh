#!/bin/bash
# checks.sh: in the lab guest booted with systemd as PID 1 and Debian's own dbus and bluetooth
# services (lab/service-lab.sh), enagent is installed from its Debian package with the Swift
# toolchain hidden, then run with the README's commands as an administrator, a member of the
# group enagent and another user would, and checked: the radio on btmon's capture (onair.py),
# the rest as the user meets it (systemctl, enctl, journalctl).
# Writes the run's manifest, OUT/phases.jsonl (manifest.sh): a phase "check" per check (its name, its
# verdict ok or FAILED, what it saw), a phase "figure" per figure, and "done" at the end, which
# lab/service-report.py reads; OUT/rc says whether every check held.
set -u
OUT=$LAB/out SD=$LAB/sd
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
export BTSNOOP=/run/btlab.snoop
. "$SD/bluez.sh"
. "$SD/manifest.sh"
rm -f "$OUT/phases.jsonl"
check() {  # check NAME DETAIL COMMAND...: ok when COMMAND succeeds
    name=$1 detail=$2; shift 2
    if "$@"; then verdict=ok; else verdict=FAILED; fi
    echo "$verdict $name: $detail"; phase check name="$name" verdict="$verdict" detail="$detail"
}
figure() { echo "$*"; phase figure text="$*"; }
step() { echo; echo "=== $* ($(uptime_seconds) s)"; }
now() { date +%s.%N; }
# wait_for SECONDS COMMAND...: until COMMAND succeeds (polled every 0.5 s); fails after SECONDS.
wait_for() {
    deadline=$(( $(cut -d. -f1 /proc/uptime) + $1 )); shift
    until "$@"; do [ "$(cut -d. -f1 /proc/uptime)" -ge "$deadline" ] && return 1; sleep 0.5; done
}
status_json() { enctl status --json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])' 2>/dev/null; }
status_is() { case "$(status_json)" in "$1"*) return 0;; esac; return 1; }
advertised() { python3 "$SD/advertised.py" "$BTSNOOP" hci0 "$1" "$2"; }
as() { user=$1; shift; runuser -u "$user" -- "$@"; }
database=/var/lib/enagent/enagent.db
snapshot() { python3 "$SD/snapshot.py" "$database"; }
# keys_kept BEFORE AFTER [TIME]: snapshot AFTER keeps every key of BEFORE and adds none for a day
# that had keys (a day's keys: its first and up to two same-day rolls, all with the day's
# rolling start); with TIME, it has a key for TIME's day.
keys_kept() { python3 -c 'import json, sys
before, after = (json.load(open(path))["keys"] for path in sys.argv[1:3])
days = {start for start, _, _ in before}
added = [key for key in after if key not in before]
day = int(sys.argv[3]) // 600 // 144 * 144 if len(sys.argv) > 3 else None
sys.exit(not (all(key in after for key in before) and not any(start in days for start, _, _ in added)
              and (day is None or any(start == day for start, _, _ in after))))' "$@"; }
# key_days SNAPSHOT: its keys per rolling start ("start×count ...").
key_days() { python3 -c 'import collections, json, sys
print(" ".join(f"{start}x{count}" for start, count in sorted(collections.Counter(k[0] for k in json.load(open(sys.argv[1]))["keys"]).items())))' "$1"; }
# within SECONDS RESULT: RESULT (advertised.py's) came within SECONDS.
within() { [ "$2" != timeout ] && [ -n "$2" ] && awk -v limit="$1" -v took="${2%% *}" 'BEGIN { exit !(took <= limit) }'; }
refused() { [ "$1" = 1 ] && grep -q 'not allowed' <<< "$2"; }
# clock_back_to UNIX UPTIME: the wall clock back from a step, to what it would read now had it read
# UNIX at UPTIME: what the guest writes to the lab share is dated as on the host again.
clock_back_to() { date -s "@$(( $1 + $(cut -d. -f1 /proc/uptime) - $2 ))" > /dev/null; }
windows_count() { enctl windows --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'; }
json_field() { python3 -c 'import json, sys; print(eval(sys.argv[2], {}, {"d": json.load(open(sys.argv[1]))}))' "$1" "$2"; }

# A larger buffer for btmon's socket alone (as lab/boot-lab.sh: the kernel drops what does not fit).
rmem=$(cat /proc/sys/net/core/rmem_default); echo 33554432 > /proc/sys/net/core/rmem_default
btmon -w "$BTSNOOP" > /dev/null 2>&1 & BTMON=$!
for i in $(seq 100); do ls -l /proc/$BTMON/fd 2>/dev/null | grep -q socket: && break; sleep 0.05; done; echo "$rmem" > /proc/sys/net/core/rmem_default

step "the guest's systemd, dbus and bluetooth"
boot_state=$(timeout 60 systemctl is-system-running --wait)
systemctl --no-pager --failed; systemctl --no-pager list-jobs
booted() { case "$boot_state" in running|degraded) systemctl -q is-active dbus bluetooth;; *) return 1;; esac; }
check boot "systemd is $boot_state, $(systemctl --failed --plain --no-legend | wc -l) units failed; dbus $(systemctl is-active dbus), bluetooth $(systemctl is-active bluetooth)" \
    booted
adapters_powered() { [ "$(prop hci0 org.bluez.Adapter1 Powered) $(prop hci1 org.bluez.Adapter1 Powered)" = "true true" ]; }
check adapters "bluetoothd offers hci0 and hci1, powered (AutoEnable)" \
    wait_for 60 adapters_powered

step "no Swift toolchain: its directories hidden"
while read -r dir; do mount -t tmpfs -o ro,mode=0755 tmpfs "$dir" && echo "hidden: $dir"; done < "$SD/toolchain-dirs"
check no-toolchain "no swift on PATH, no libswiftCore.so for the loader ($(wc -l < "$SD/toolchain-dirs") directories hidden)" \
    sh -c '! command -v swift > /dev/null && ! ldconfig -p | grep -q libswiftCore && ! find $(cat '"$SD"'/toolchain-dirs) -name "libswiftCore*" | grep -q .'

install_command=$(cat "$SD/install-command")  # dpkg -i, or apt-get install (lab/service-lab.sh's INSTALL)
step "$install_command"
# The guest's root is the host's: what an enagent the host runs (or a stray test) keeps there is
# not this installation's (a database root had made once kept the package's daemon from starting).
rm -rf /etc/enagent /var/lib/enagent /var/lib/enagent-detect /var/cache/enagent-detect
# man-db's trigger would rebuild the whole index of the host's pages, minutes in the emulated guest.
rm -f /var/lib/man-db/auto-update  # man-db/auto-update false
$install_command "$SD/enagent.deb" > "$OUT/dpkg.log" 2>&1; dpkg_rc=$?
tail -5 "$OUT/dpkg.log"
check install "$install_command exit $dpkg_rc; $(dpkg-query -W -f='${Package} ${Version}: ${Status}' enagent 2>&1)" \
    sh -c "[ $dpkg_rc = 0 ] && dpkg-query -W -f='\${Status}' enagent | grep -q 'install ok installed'"
missing=$(ldd /usr/sbin/enagentd /usr/bin/enctl 2>&1 | grep -e 'not found' -e swift)
check libraries "enagentd and enctl load only Debian's libraries: $(ldd /usr/sbin/enagentd | wc -l) for enagentd${missing:+; $missing}" \
    [ -z "$missing" ]
check user "the package made the user and group enagent: $(id enagent 2>&1)" id enagent
check key-server-conf "the package's key-server.conf, all commented: $(stat -c '%a %U:%G' /etc/enagent/key-server.conf 2>&1), $(grep -c '^[^#]' /etc/enagent/key-server.conf) settings" \
    sh -c "[ \"\$(stat -c '%a %U:%G' /etc/enagent/key-server.conf)\" = '640 root:enagent' ] && ! grep -q '^[^#]' /etc/enagent/key-server.conf"
figure "package $(stat -c %s "$SD/enagent.deb") bytes; enagentd $(stat -c %s /usr/sbin/enagentd) bytes, enctl $(stat -c %s /usr/bin/enctl) bytes (installed, stripped)"
# Debian's convention (deb-systemd-helper): the service enabled and started at once, and idle
# until someone enables Exposure Notification; here under the default configuration, which waits
# for NTP (the guest has none) and asks the kernel every few seconds.
started_by_dpkg() { systemctl -q is-active enagentd && [ "$(systemctl show -p NRestarts --value enagentd)" = 0 ]; }
wait_for 20 started_by_dpkg; sleep 10
check installed-running "after dpkg -i: enagentd.service $(systemctl is-enabled enagentd), $(systemctl is-active enagentd), restarted $(systemctl show -p NRestarts --value enagentd) times in 10 s, status $(status_json); enagent-detect.timer $(systemctl is-enabled enagent-detect.timer)" \
    started_by_dpkg

step "configuration, users, systemctl enable --now"
# The guest has no NTP, and scans every 30 s (the shortest pause detection allows: 26 s) so that the
# phones below are heard within the run.
printf '%s\n' 'require-synchronised-clock = no' 'scan-interval-seconds = 30' >> /etc/enagent/enagent.conf
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out /root/authority.pem
useradd -M -N -G enagent member; useradd -M -N other
systemctl enable --now enagentd
systemctl restart enagentd
check started "systemctl enable --now enagentd; restart after editing enagent.conf: $(systemctl is-active enagentd)" \
    wait_for 30 systemctl -q is-active enagentd
pid=$(systemctl show -p MainPID --value enagentd)
check sandbox "runs as $(ps -o user= -p "$pid"), CapEff $(awk '/^CapEff/ {print $2}' /proc/"$pid"/status), NoNewPrivs $(awk '/^NoNewPrivs/ {print $2}' /proc/"$pid"/status), seccomp $(awk '/^Seccomp:/ {print $2}' /proc/"$pid"/status), watchdog $(systemctl show -p WatchdogUSec --value enagentd)" \
    sh -c "[ \"\$(ps -o user= -p $pid)\" = enagent ] && grep -q '^CapEff:.*0000000000003000' /proc/$pid/status && grep -q '^NoNewPrivs:.*1' /proc/$pid/status \
        && grep -q '^Seccomp:.*2' /proc/$pid/status && [ \"\$(systemctl show -p WatchdogUSec --value enagentd)\" = 1min ]"
check status-line "systemd's status line: $(systemctl show -p StatusText --value enagentd)" \
    sh -c '[ -n "$(systemctl show -p StatusText --value enagentd)" ]'
check other-status "another user reads enctl status: $(as other enctl status 2>&1 | head -1)" as other enctl status

step "a member of enagent enables; the radio"
enabled_at=$(now)
enabled=$(as member enctl enable 2>&1); enabled_rc=$?
check member-enable "enctl enable as a member of the group enagent: exit $enabled_rc${enabled:+, \"$enabled\"}" [ $enabled_rc = 0 ]
on_air=$(advertised "$enabled_at" 20)
check advertising "hci0 advertises (btmon) ${on_air%% *} s after enctl enable (address and RPI: ${on_air#* }); status $(status_json)" \
    within 20 "$on_air"
refused=$(as other enctl enable 2>&1); refused_rc=$?
check other-enable "enctl enable by another user: exit $refused_rc, \"${refused%% (*}\"" \
    refused "$refused_rc" "$refused"
refused_and_nothing_written() { [ ! -s /tmp/other-keys.txt ] && refused "$refused_rc" "$refused"; }
refused=$(cd /tmp && as other enctl keys export --yes --out /tmp/other-keys.txt 2>&1); refused_rc=$?
check other-export "enctl keys export by another user: exit $refused_rc, \"${refused%% (*}\"" \
    refused_and_nothing_written

step "phones nearby"
sightings_before=$(snapshot | python3 -c 'import json, sys; print(json.load(sys.stdin)["sightings"])')
# wchar: the bytes enagentd hands to write(2) and pwrite(2) (an upper bound of what a disk gets from it: writes to sockets count too; the
# guest's root is in memory, so write_bytes, what reached a block device, stays 0 here).
written() { awk '/^wchar/ {print $2}' "/proc/$pid/io"; }
written_before=$(written)
python3 "$SD/phones.py" "$OUT" 0 1 crowd 45 hci1
sleep 25  # the next scan writes what it heard
written_after=$(written)
sightings_after=$(snapshot | python3 -c 'import json, sys; print(json.load(sys.stdin)["sightings"])')
recorded=$(( sightings_after - sightings_before ))
figure "enagentd writes to disk while phones are near: $(( written_after - written_before )) bytes for $recorded sightings in 70 s ($(( (written_after - written_before) / (recorded > 0 ? recorded : 1) )) bytes a sighting: WAL pages and their checkpoint)"
heard=$(python3 -c 'import json, sqlite3, sys
rpis = {json.loads(line)["rpi"] for line in open(sys.argv[1])}
db = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
stored = {rpi.hex() for (rpi,) in db.execute("SELECT rpi FROM sighting")}
print(len(rpis & stored), len(rpis))' "$OUT/phones.jsonl" "$database")
check sightings "enagentd stored ${heard% *} of the ${heard#* } phones' RPIs" sh -c "[ '${heard% *}' = '${heard#* }' ] && [ '${heard% *}' -gt 0 ]"

step "systemctl kill -s KILL enagentd"
killed_pid=$pid killed_at=$(now)
systemctl kill -s KILL enagentd
back=$(advertised "$killed_at" 20)
pid=$(systemctl show -p MainPID --value enagentd)
restarted_in_time() { [ "$pid" != "$killed_pid" ] && [ "$pid" != 0 ] && within 10 "$back"; }
check kill-restart "restarted by systemd (pid $killed_pid -> $pid, NRestarts $(systemctl show -p NRestarts --value enagentd)); hci0 advertising a new RPI from a new address ${back%% *} s after the kill (at most 10)" \
    restarted_in_time

step "systemctl restart bluetooth"
restarted_at=$(now)
systemctl restart bluetooth
back=$(advertised "$restarted_at" 20)
# From the capture's history: a 4 s scan every 30 s can fall between two polls of the live state.
scanning=$(python3 "$SD/advertised.py" --scanning "$BTSNOOP" hci0 "$restarted_at" 20)
sleep 5
wrong_adapter=$(journalctl -u enagentd --since "@${restarted_at%.*}" -o cat | grep hci1)
radio_back_in_time() { within 10 "$back" && within 10 "$scanning" && [ -z "$wrong_adapter" ]; }
check bluetooth-restart "hci0 advertising a new RPI ${back%% *} s after the restart, scanning after $scanning s (at most 10)${wrong_adapter:+; the agent on hci0 logs about hci1: $wrong_adapter}" \
    radio_back_in_time

step "the detection timer: a missed run, without a key server"
python3 "$SD/phones.py" export "$OUT/phones.jsonl" /root/phones.zip
# The bucket as Google's key server writes it: ROOT/index.txt of whole object names, no newline at its end.
mkdir -p /srv/keys/exposureKeyExport-LAB
enctl keys sign /root/phones.zip --private-key /root/authority.pem --key-id 228 --region LAB \
    --out /srv/keys/exposureKeyExport-LAB/1600000000-1600003600-00001.zip
printf '%s' exposureKeyExport-LAB/1600000000-1600003600-00001.zip > /srv/keys/exposureKeyExport-LAB/index.txt
python3 -m http.server 8000 --bind 127.0.0.1 --directory /srv/keys 2> "$OUT/key-server.log" & SERVER=$!
check timer "enagent-detect.timer enables: $(systemctl enable --now enagent-detect.timer 2>&1 | tail -1); $(systemctl is-active enagent-detect.timer), next $(systemctl show -p NextElapseUSecRealtime --value enagent-detect.timer)" \
    systemctl -q is-active enagent-detect.timer
# detect_runs: how often systemd has started enagent-detect.service since boot (its UNIT_STARTING entries).
detect_runs() { journalctl -b -u enagent-detect.service -o cat MESSAGE_ID=7d4958e842da4a758f6c1cdc7b36dcc5 | grep -c . ; }
# unix_time PROPERTY [UNIT]: a timestamp of systemd's (the manager's without UNIT) in unix seconds,
# 0 when unset. (systemctl 252 prints some, such as NextElapseUSecRealtime, in its own format
# whatever --timestamp= says; date reads both.)
unix_time() {
    value=$(systemctl show --timestamp=unix -p "$1" --value ${2:+"$2"})
    case $value in ''|n/a) echo 0;; *) date -d "$value" +%s;; esac
}
timer_state() { systemctl show -p SubState --value enagent-detect.timer; }
# boot_timer: the timer's stamp (the time of its last trigger) a day back, past a 4-hour calendar
# time and its random delay, then the timer restarted as at boot: it reads the stamp when it starts.
boot_timer() {
    touch -d '-1 day' /var/lib/systemd/timers/stamp-enagent-detect.timer
    booted_at=$(date +%s)
    systemctl restart enagent-detect.timer
}
# caught_up: the restarted timer triggered its service, which is done (run or skipped): the timer waits again.
caught_up() { [ "$(unix_time LastTriggerUSec enagent-detect.timer)" -ge "$booted_at" ] 2> /dev/null && [ "$(timer_state)" = waiting ]; }
# next_calendar_time: the shipped timer's next OnCalendar= time, in unix seconds.
next_calendar_time() {
    date -d "$(systemd-analyze calendar "$(sed -n 's/^OnCalendar=//p' "$(systemctl show -p FragmentPath --value enagent-detect.timer)")" \
        | sed -n 's/^ *Next elapse: //p')" +%s
}
# clear_of_calendar_time SECONDS: the checks that follow count the timer's runs for up to SECONDS; a
# calendar time within them adds a run of its own (CI once reached the last check at 19:59:5x UTC),
# so that time is let pass first, and its run end.
clear_of_calendar_time() {
    until_calendar=$(( $(next_calendar_time) - $(date +%s) ))
    [ "$until_calendar" -ge "$1" ] && return
    echo "the calendar time is $until_calendar s away: waiting until it and its run have passed"
    sleep $(( until_calendar + 2 ))
    wait_for 120 eval '[ "$(timer_state)" != running ]'
}
# systemd 252 (src/core/timer.c) moves a calendar time missed before the service manager started to
# that start (the boot), then adds RandomizedDelaySec=: after a real boot the catch-up comes 0–30
# minutes after systemd started. Here the timer restarts minutes after the guest's boot: due at once
# when the delay drawn is shorter than that, else later; this check reads systemd's plan, the
# checks below run the catch-up with the lab's drop-in RandomizedDelaySec=0.
clear_of_calendar_time 20
boot_timer; sleep 3
manager_started=$(unix_time UserspaceTimestamp)
if caught_up; then
    planned="triggered at once (its random delay, less than the $(( booted_at - manager_started )) s since the guest's systemd started, had passed)"
    planned_from_boot() { true; }
else
    due=$(unix_time NextElapseUSecRealtime enagent-detect.timer)
    planned="due $(( due - manager_started )) s after the guest's systemd started (in $(( due - $(date +%s) )) s)"
    planned_from_boot() { [ "$due" -ge "$manager_started" ] && [ "$due" -le $(( manager_started + 1800 )) ] && [ "$due" -gt "$(date +%s)" ]; }
fi
check timer-delay "the shipped RandomizedDelaySec=$(systemctl show -p RandomizedDelayUSec --value enagent-detect.timer), the last run a day ago, the timer restarted: catch-up $planned; at most 30 min after the boot" \
    planned_from_boot
# Stopped first: a reload would replan the running timer, due at once without the delay.
systemctl stop enagent-detect.timer
mkdir -p /run/systemd/system/enagent-detect.timer.d
printf '[Timer]\nRandomizedDelaySec=0\n' > /run/systemd/system/enagent-detect.timer.d/lab.conf
systemctl daemon-reload
clear_of_calendar_time 70
runs_before=$(detect_runs)
boot_timer
wait_for 60 caught_up
complaints=$(journalctl -u enagent-detect.service -u enagent-detect.timer -p warning --since "@$booted_at" -o cat | grep -c .)
# key-server.conf as the package installed it, no url: ExecCondition= skips the service (result
# exec-condition), which systemd starts once for the condition and does not count as failed.
skipped() {
    caught_up && [ "$(systemctl show -p Result --value enagent-detect.service)" = exec-condition ] \
        && [ "$(unix_time InactiveEnterTimestamp enagent-detect.service)" -ge "$booted_at" ] && [ "$(detect_runs)" -le $(( runs_before + 1 )) ] \
        && [ "$complaints" = 0 ] && ! systemctl -q is-failed enagent-detect.service
}
check detection-skipped "no key server configured (key-server.conf without url), a missed run: the timer triggered $(( $(unix_time LastTriggerUSec enagent-detect.timer) - booted_at )) s after its restart, the service started $(( $(detect_runs) - runs_before )) time(s), result $(systemctl show -p Result --value enagent-detect.service), $complaints journal lines at warning or above; timer $(systemctl is-active enagent-detect.timer) ($(timer_state)), next $(systemctl show -p NextElapseUSecRealtime --value enagent-detect.timer)" \
    skipped

step "the detection timer: a missed run, against a key server on loopback"
# README's steps in their order, to a running enagentd and without a restart: key-server.conf
# filled in (its mode and group stay the package's), the authority's key in trusted-keys/, the timer.
printf '%s\n' 'url = http://127.0.0.1:8000/' 'index = exposureKeyExport-LAB/index.txt' 'region = LAB' > /etc/enagent/key-server.conf
openssl ec -in /root/authority.pem -pubout -out /etc/enagent/trusted-keys/228_v1.pem 2>/dev/null
restarts_before_key=$(systemctl show -p NRestarts --value enagentd) pid_before_key=$(systemctl show -p MainPID --value enagentd)
key_server_up() { python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8000)).close()' 2> /dev/null; }
wait_for 60 key_server_up
clear_of_calendar_time 200
runs_before=$(detect_runs)
boot_timer
wait_for 180 caught_up
# From the timer's restart to its service's start, both on systemd's monotonic clock.
started_after=$(awk -v timer="$(systemctl show -p ActiveEnterTimestampMonotonic --value enagent-detect.timer)" \
    -v service="$(systemctl show -p InactiveExitTimestampMonotonic --value enagent-detect.service)" 'BEGIN { printf "%.1f", (service - timer) / 1e6 }')
sleep 10
journalctl -u enagent-detect --no-pager -o cat | tail -8
runs=$(( $(detect_runs) - runs_before ))
windows=$(windows_count)
detected() { [ "$(systemctl show -p Result --value enagent-detect.service)" = success ] && [ "$windows" -gt 0 ]; }
detected_without_restart() { detected && [ "$(systemctl show -p MainPID --value enagentd)" = "$pid_before_key" ]; }
check detection "the timer's run against the key server, the authority's key put in place while enagentd ran (pid $pid_before_key -> $(systemctl show -p MainPID --value enagentd), restarts $restarts_before_key -> $(systemctl show -p NRestarts --value enagentd)): enagent-detect.service result $(systemctl show -p Result --value enagent-detect.service), exit status $(systemctl show -p ExecMainStatus --value enagent-detect.service); $windows exposure windows recorded" \
    detected_without_restart
ran_once() { [ "$runs" = 1 ] && [ "$(timer_state)" = waiting ]; }
check timer-catch-up "the last run a day ago, the timer restarted as at boot (RandomizedDelaySec=0): enagent-detect.service started ${started_after} s after, ran $runs time(s) up to 10 s after it ended; timer $(timer_state), next $(systemctl show -p NextElapseUSecRealtime --value enagent-detect.timer)" \
    ran_once
# Without a missed run (the stamp is the run above), a restart plans the next calendar time only.
clear_of_calendar_time 20
runs_before=$(detect_runs) last_trigger=$(unix_time LastTriggerUSec enagent-detect.timer)
systemctl restart enagent-detect.timer
sleep 10
runs=$(( $(detect_runs) - runs_before ))
next=$(unix_time NextElapseUSecRealtime enagent-detect.timer)
calendar_next=$(next_calendar_time)
nothing_ran() { [ "$runs" = 0 ] && [ "$(unix_time LastTriggerUSec enagent-detect.timer)" = "$last_trigger" ] && [ "$next" = "$calendar_next" ]; }
check timer-no-missed-run "the last run $(( $(date +%s) - last_trigger )) s ago, the timer restarted: enagent-detect.service ran $runs times in 10 s; next $(date -d "@$next" '+%H:%M:%S'), the next calendar time $(date -d "@$calendar_next" '+%H:%M:%S')" \
    nothing_ran
figure "detection timer after a missed run: with the shipped RandomizedDelaySec=30min the catch-up $planned; with the lab's 0 it started ${started_after} s after the timer's restart and ran once; without a missed run nothing ran"
# The key server goes, and its configuration with it: the clock steps below fire the timer, whose
# service is then skipped (grep finds no file).
rm -r /run/systemd/system/enagent-detect.timer.d /etc/enagent/key-server.conf; systemctl daemon-reload
kill $SERVER

step "suspend and resume through systemd-logind (systemctl suspend; the guest's own sleep emulated)"
# The guest cannot sleep: systemd-suspend.service's step that writes /sys/power/state is replaced by
# what a night's sleep does to enagentd and its adapter: no process runs (enagentd stopped), the
# adapter's power goes and comes back (a laptop's dongle), the wall clock moves on into the next
# day. logind, systemd and the order of the sleep are the real ones: PrepareForSleep(true), the
# wait for the delay locks, suspend.target, PrepareForSleep(false) after.
inhibitor=$(systemd-inhibit --list --no-pager 2>&1 | grep enagentd | tr -s ' ')
check sleep-inhibitor "enagentd holds a delay lock on sleep (systemd-inhibit --list: ${inhibitor:-none})" \
    sh -c "echo '$inhibitor' | grep -q 'sleep' && echo '$inhibitor' | grep -q 'delay'"
pid=$(systemctl show -p MainPID --value enagentd)
snapshot > "$OUT/before-sleep.json"
sleep_stepped_at=$(date +%s) sleep_uptime=$(cut -d. -f1 /proc/uptime)
woke_at=$(( (sleep_stepped_at / 86400 + 1) * 86400 + 7200 ))
printf '#!/bin/sh\nkill -STOP %s\nbusctl set-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Powered b false\ndate -s @%s > /dev/null\nbusctl set-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Powered b true\nkill -CONT %s\n' \
    "$pid" "$woke_at" "$pid" > /run/lab-sleep.sh
chmod +x /run/lab-sleep.sh
mkdir -p /run/systemd/system/systemd-suspend.service.d
printf '[Service]\nExecStart=\nExecStart=/run/lab-sleep.sh\n' > /run/systemd/system/systemd-suspend.service.d/lab-sleep.conf
systemctl daemon-reload
slept_at=$(now)
systemctl suspend
woke=$(advertised "$woke_at" 30)
wait_for 30 status_is active
snapshot > "$OUT/after-sleep.json"
# Nothing of before the sleep after it: every EN advertisement hci0 had from the sleep on is a new
# RPI (the kernel enables the instances it kept at power-on, from a new address).
stale=$(python3 -c 'import sys
sys.path.insert(0, sys.argv[3])
import onair
found = onair.advertisements(sys.argv[1], [0])[0]
since = float(sys.argv[2])
before = {a["data"][11:27] for a in found if onair.unix_seconds(a["time"]) < since}
print(sum(1 for a in found if onair.unix_seconds(a["time"]) >= since and a["data"][11:27] in before))' "$BTSNOOP" "$slept_at" "$SD")
suspended_cleanly() {
    within 10 "$woke" && [ "$stale" = 0 ] && keys_kept "$OUT/before-sleep.json" "$OUT/after-sleep.json" "$woke_at" \
        && [ "$(json_field "$OUT/after-sleep.json" 'd["sightings"]')" -ge "$(json_field "$OUT/before-sleep.json" 'd["sightings"]')" ]
}
check suspend "systemctl suspend, asleep into the next day: advertising a new RPI from a new address ${woke%% *} s after the wake (at most 10); $stale advertisements of an RPI from before the sleep after it; $(journalctl -u enagentd --since "@${slept_at%.*}" -o cat | grep -c 'going to sleep') sleep lines in the journal; keys $(key_days "$OUT/after-sleep.json"), one for the new day; sightings $(json_field "$OUT/before-sleep.json" 'd["sightings"]') -> $(json_field "$OUT/after-sleep.json" 'd["sightings"]')" \
    suspended_cleanly
rm -r /run/systemd/system/systemd-suspend.service.d; systemctl daemon-reload
# The clock stays on the new day: the steps below go on from there (a step back now would leave
# the agent waiting for the interval it put on the air at the wake), and go back after the beacon.

step "a positive test shared (README's sharing steps), then the whole journal as a member of adm who is not in enagent"
# On the new day yesterday's key has rolled, and may be shared. The health authority's servers
# are the command tests' (Tests/CommandTests/Servers: Google's verification and key servers'
# behaviour); key-server.conf as sudoedit leaves it, its mode and group the package's.
python3 "$SD/servers/health_authority.py" 8001 /run/publishes.jsonl > /run/health-authority.log 2>&1 & AUTHORITY=$!
install -m 0640 -o root -g enagent /dev/null /etc/enagent/key-server.conf  # as the package installs it (removed above)
printf '%s\n' 'url = http://127.0.0.1:8001/' 'publish-url = http://127.0.0.1:8001/v1/publish' 'health-authority = test-authority' \
    'verification-url = http://127.0.0.1:8001/' 'verification-api-key = test-api-key' > /etc/enagent/key-server.conf
authority_up() { python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8001)).close()' 2> /dev/null; }
wait_for 30 authority_up
added=$(enctl test-result add --code 12345678 2>&1); added_status=$?
shared=$(enctl share --yes 2>&1); shared_status=$?
kill $AUTHORITY
published=$(python3 -c 'import json, sys
print(sum(len(line.get("keys", [])) for line in map(json.loads, open(sys.argv[1])) if line.get("status") == 200))' /run/publishes.jsonl 2>/dev/null || echo 0)
check share "enctl test-result add --code: exit $added_status; enctl share --yes: exit $shared_status (${shared##*$'\n'}); $published keys published" \
    sh -c "[ $added_status = 0 ] && [ $shared_status = 0 ] && [ $published -gt 0 ]"
# The journal is readable by the groups adm and systemd-journal (Raspberry Pi OS's first user is in
# adm): neither the matching detection nor the share left anything there of an exposure, a match,
# a test or an upload.
useradd -M -N -G adm reader
# Every entry but those of the lab's own units (this script's lines, which name what it checked).
# (systemd's own "Starting enagent-detect.service - enagent key uploads still pending, …" names the
# unit's work, nobody's; dbus-daemon's "Rejected send message, 2 matched rules" is its policy's.)
told=$(runuser -u reader -- journalctl -b -o json | python3 -c 'import json, re, sys
health = re.compile(r"keys? matched|[0-9]+ matched,|exposure windows?( |$)|you were exposed|exposed recently|test result|positive|upload\(s\)|uploads? (sent|accepted|refused|kept|due|was|is)|shared [0-9]+ key|keys? published", re.I)
entries = (json.loads(line) for line in sys.stdin)
told = [str(e.get("MESSAGE")) for e in entries if not str(e.get("_SYSTEMD_UNIT", "")).startswith("btlab-") and health.search(str(e.get("MESSAGE")))]
print(len(told), told[0] if told else "", sep="\t")')
check journal-health "$(runuser -u reader -- journalctl -b -o cat | wc -l) lines of the journal as 'reader' (group adm, not enagent), ${told%%$'\t'*} of them (the lab's own left aside) tell of matches, exposures, tests or uploads${told#*$'\t'}" \
    [ "${told%%$'\t'*}" = 0 ]
rm /etc/enagent/key-server.conf

step "enagentd hangs (SIGSTOP): systemd's watchdog"
# Stopped, not killed: no WATCHDOG=1 comes any more, and the kernel keeps the last advertisement on
# the air. The shipped WatchdogSec=60s: the agent pings every 30 s, so systemd ends it 30–60 s after.
# On the next day (the wall clock stepped): restarted within the interval already on the air, the
# agent rolls to a fresh key for a fresh RPI, and a day has three keys at most: the kill and the
# bluetoothd restart above may have spent today's, and with none left the agent stays silent until
# the next 10-minute interval. (Not a year ahead: a restarted agent applies retention to that clock.)
day_stepped_at=$(date +%s) day_uptime=$(cut -d. -f1 /proc/uptime); day_at=$(( day_stepped_at + 86400 ))
date -s "@$day_at" > /dev/null
new_day=$(advertised "$day_at" 90)
wait_for 30 status_is active
snapshot > "$OUT/before-hang.json"; windows_before=$(windows_count)
hung_pid=$pid restarts_before=$(systemctl show -p NRestarts --value enagentd) hung_at=$(now)
kill -STOP "$hung_pid"
back=$(advertised "$hung_at" 120)
pid=$(systemctl show -p MainPID --value enagentd)
wait_for 30 status_is active
snapshot > "$OUT/after-hang.json"; windows_after=$(windows_count)
timed_out_at=$(journalctl -u enagentd --since "@${hung_at%.*}" -o short-unix | awk '/Watchdog timeout/ {print $1; exit}')
timed_out_after=$(awk -v a="$hung_at" -v b="$timed_out_at" 'BEGIN { printf "%.1f", b - a }')
ended_by=$(journalctl -u enagentd --since "@${hung_at%.*}" -o cat | grep -m1 -o "Failed with result '[a-z-]*'")
restarted_by_watchdog() {
    within 90 "$new_day" && [ -n "$timed_out_at" ] && [ "$ended_by" = "Failed with result 'watchdog'" ] \
        && [ "$pid" != "$hung_pid" ] && [ "$pid" != 0 ] && within 90 "$back"
}
check watchdog-restart "on the next day (advertising its key ${new_day%% *} s after the step), SIGSTOP to pid $hung_pid: systemd's watchdog (WatchdogSec $(systemctl show -p WatchdogUSec --value enagentd)) timed out ${timed_out_after} s after, \"$ended_by\", restarted (pid $hung_pid -> $pid, NRestarts $restarts_before -> $(systemctl show -p NRestarts --value enagentd)); hci0 advertising a new RPI from a new address ${back%% *} s after the hang (address and RPI: ${back#* }; at most 90)" \
    restarted_by_watchdog
# Committed: the database's keys (a restart may roll the day's key: it ends earlier, and stays),
# sightings and exposure windows.
committed_kept() {
    python3 -c 'import json, sys
before, after = (json.load(open(path)) for path in sys.argv[1:3])
sys.exit(not ({key for _, _, key in before["keys"]} <= {key for _, _, key in after["keys"]}
              and after["sightings"] >= before["sightings"] and after["integrity"] == "ok"))' "$OUT/before-hang.json" "$OUT/after-hang.json" \
        && [ "$windows_after" -ge "$windows_before" ] 2> /dev/null
}
check watchdog-kept "nothing committed lost: keys $(json_field "$OUT/before-hang.json" 'len(d["keys"])') -> $(json_field "$OUT/after-hang.json" 'len(d["keys"])') (each kept), sightings $(json_field "$OUT/before-hang.json" 'd["sightings"]') -> $(json_field "$OUT/after-hang.json" 'd["sightings"]'), exposure windows $windows_before -> $windows_after, integrity $(json_field "$OUT/after-hang.json" 'd["integrity"]')" \
    committed_kept
figure "watchdog: enagentd hung (SIGSTOP) ended by systemd ${timed_out_after} s after (WatchdogSec=60s), advertising a new RPI from a new address ${back%% *} s after the hang"

step "another program's advertisement on hci0, in the instance enagentd would take"
# A beacon (manufacturer data "lab-beacon") added through the kernel's management interface in
# the highest instance, the one enagentd takes when it is free, while enagentd is stopped; then a
# SIGKILL, whose run's instance the next run must replace, never the beacon's. On the day after
# (the clock stepped once more): the start and the restart each roll to a fresh key within the
# interval on the air, and the hang above spent one of this day's three.
if python3 "$SD/beacon.py" --extended "$BTSNOOP" 0; then
    BEACON=6c61622d626561636f6e
    # btmgmt (BlueZ 5.66) prints nothing unless its output is a terminal.
    btmgmt() { script -qec "btmgmt $*" /dev/null < /dev/null | tr -d '\r'; }
    beacon_day_at=$(( $(date +%s) + 86400 ))
    date -s "@$beacon_day_at" > /dev/null
    beacon_day=$(advertised "$beacon_day_at" 90)
    wait_for 30 status_is active
    systemctl stop enagentd
    highest=$(btmgmt --index 0 advinfo | sed -n 's/^Max instances: \([0-9]*\)$/\1/p')
    beacon_at=$(now)
    added=$(btmgmt --index 0 add-adv -d "0dffffff$BEACON" "$highest")
    systemctl start enagentd
    back=$(advertised "$beacon_at" 30)
    sleep 5
    # "on-air HANDLE N": the beacon's set enabled at the end of the capture, beside N EN sets.
    beacon=$(python3 "$SD/beacon.py" "$BTSNOOP" 0 "$BEACON")
    both_on_air() { within 90 "$beacon_day" && within 30 "$back" && [ "$beacon" = "on-air $highest 1" ]; }
    check other-advertiser "on the day after (advertising ${beacon_day%% *} s after the step), a beacon in the highest instance ($added) while enagentd was stopped, which the kernel does not list alone: enagentd advertising ${back%% *} s after its start; the beacon and EN sets enabled (btmon): $beacon" \
        both_on_air
    pid=$(systemctl show -p MainPID --value enagentd)
    killed_pid=$pid killed_at=$(now)
    systemctl kill -s KILL enagentd
    back=$(advertised "$killed_at" 20)
    pid=$(systemctl show -p MainPID --value enagentd)
    sleep 3
    beacon=$(python3 "$SD/beacon.py" "$BTSNOOP" 0 "$BEACON")
    own_replaced() { [ "$pid" != "$killed_pid" ] && within 10 "$back" && [ "$beacon" = "on-air $highest 1" ]; }
    check kill-own-instance "SIGKILL to pid $killed_pid, restarted as $pid: hci0 advertising a new RPI ${back%% *} s after; the killed run's set replaced, the beacon's kept: the beacon and EN sets enabled (btmon): $beacon" \
        own_replaced
    btmgmt --index 0 rm-adv "$highest" > /dev/null
else
    figure "another program's advertisement: not run on this legacy (BT 4.x) controller, whose one advertising set the kernel lends to each instance in turn, each turn from a new address: enagentd steps aside there (adapter-shared; make lab-test's SECOND ADVERTISER checks it)"
fi
clock_back_to "$sleep_stepped_at" "$sleep_uptime"  # before the sleep's and these days' steps

step "idle footprint (radio on: advertising, a 4 s scan every 30 s)"
sleep 10
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
before=$(ticks) written_before=$(written); sleep 60; after=$(ticks) written_after=$(written)
# Once a minute has passed since its start, enagentd has dropped the pages its start touched (CodeResidency); it
# complains in the journal when it cannot (the service's sandbox once kept it from reading its own page map).
up=$(ps -o etimes= -p "$pid" | tr -d ' ') complaints=$(journalctl _PID="$pid" -o cat | grep -c "code touched once stays resident")
dropped() { [ "$up" -ge 60 ] && [ "$complaints" -eq 0 ]; }
check code-residency "pid $pid up $up s, $complaints complaints in the journal that its code stays resident" dropped
figure "enagentd idle: RSS $(awk '/^VmRSS/ {print $2, $3}' /proc/"$pid"/status), cgroup memory $(( $(systemctl show -p MemoryCurrent --value enagentd) / 1024 )) kB, CPU $(( (after - before) * 100 / $(getconf CLK_TCK) / 60 )).$(( (after - before) * 1000 / $(getconf CLK_TCK) / 60 % 10 ))% of an emulated core over 60 s (TCG)"
# What enagentd writes, scaled to an hour: the SD card's wear. The phones' and the crowd's sightings are gone by now, so this is
# the daemon's own keeping (keys, the interval on the air, WAL checkpoints) with nothing to record.
figure "enagentd writes to disk while idle: $(( written_after - written_before )) bytes in 60 s, about $(( (written_after - written_before) * 60 / 1024 )) kB an hour"
started=$(systemctl show -p ExecMainStartTimestampMonotonic --value enagentd) ready=$(systemctl show -p ActiveEnterTimestampMonotonic --value enagentd)
figure "enagentd from exec to READY=1: $(( (ready - started) / 1000 )) ms (its last start, emulated core)"

step "the wall clock stepped back a day, then forward a year"
snapshot > "$OUT/keys-before-steps.json"
stepped_at=$(date +%s) stepped_uptime=$(cut -d. -f1 /proc/uptime)
date -s "@$(( stepped_at - 86400 ))" > /dev/null
waiting_silent() { status_is waiting-for-interval && [ "$(radio hci0 | cut -d' ' -f1)" = no ]; }
wait_for 90 waiting_silent
check clock-back "stepped back a day: status $(status_json); radio hci0 (advertising scanning) $(radio hci0)" waiting_silent
snapshot > "$OUT/keys-after-back.json"
check clock-back-keys "keys per day (rolling start x keys): $(key_days "$OUT/keys-before-steps.json") before, $(key_days "$OUT/keys-after-back.json") after the step back; none added for a day that had keys" \
    keys_kept "$OUT/keys-before-steps.json" "$OUT/keys-after-back.json"
forward_at=$(( stepped_at + 365 * 86400 ))
date -s "@$forward_at" > /dev/null
back=$(advertised "$forward_at" 90)
wait_for 90 status_is active
sleep 65  # an upkeep with retention after the step
snapshot > "$OUT/keys-after-forward.json"
resumed_nothing_purged() {
    within 90 "$back" && python3 -c 'import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(not after["sightings"] >= before["sightings"] > 0)' "$OUT/keys-before-steps.json" "$OUT/keys-after-forward.json"
}
check clock-forward "stepped forward a year: advertising again after ${back%% *} s, status $(status_json); sightings $(json_field "$OUT/keys-before-steps.json" 'd["sightings"]') before the steps, $(json_field "$OUT/keys-after-forward.json" 'd["sightings"]') a minute after (retention held back)" \
    resumed_nothing_purged
check clock-forward-keys "keys per day after the step forward: $(key_days "$OUT/keys-after-forward.json"); none added for a day that had keys, one for the new day" \
    keys_kept "$OUT/keys-after-back.json" "$OUT/keys-after-forward.json" "$forward_at"
check clock-journal "the steps are warnings in the journal: $(journalctl -u enagentd -p warning -o cat | grep -ci step) lines" \
    sh -c 'journalctl -u enagentd -p warning -o cat | grep -qi step'
clock_back_to "$stepped_at" "$stepped_uptime"

step "enctl keys export by a member of enagent"
exported=$(cd /tmp && as member enctl keys export --format json --yes --out /tmp/member-keys.json 2>&1); exported_rc=$?
check member-export "enctl keys export --format json as a member: exit $exported_rc, $(stat -c %s /tmp/member-keys.json 2>/dev/null || echo no) bytes${exported:+, \"$exported\"}" \
    sh -c "[ $exported_rc = 0 ] && [ -s /tmp/member-keys.json ]"

if [ -f "$SD/cockpit-enagent.deb" ]; then
step "cockpit-enagent: Cockpit on port 9090 (systemctl start cockpit.socket)"
# What README says: the page's package installed beside enagent, then https://HOST:9090 and a
# login with one's own account, here with curl as Cockpit's login page does it (basic auth to
# /cockpit/login, the cookie it sets for what follows). The service-report requires these checks
# once this phase is written.
phase cockpit checks="cockpit-install cockpit-tls cockpit-login cockpit-page"
$install_command "$SD/cockpit-enagent.deb" > "$OUT/dpkg-cockpit.log" 2>&1; cockpit_rc=$?
tail -3 "$OUT/dpkg-cockpit.log"
check cockpit-install "$install_command cockpit-enagent.deb exit $cockpit_rc; $(dpkg-query -W -f='${Package} ${Version}: ${Status}' cockpit-enagent 2>&1)" \
    sh -c "[ $cockpit_rc = 0 ] && dpkg-query -W -f='\${Status}' cockpit-enagent | grep -q 'install ok installed'"
systemctl start cockpit.socket
cockpit_answers() { [ "$(curl -sk -o /dev/null -w '%{http_code}' https://127.0.0.1:9090/)" = 200 ]; }
wait_for 30 cockpit_answers
served=$(openssl s_client -connect 127.0.0.1:9090 < /dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256 2>/dev/null)
made=$(openssl x509 -in /etc/cockpit/ws-certs.d/0-self-signed.cert -noout -fingerprint -sha256 2>/dev/null)
cockpit_tls() { cockpit_answers && [ -n "$made" ] && [ "$served" = "$made" ] && systemctl -q is-active cockpit.socket cockpit.service; }
check cockpit-tls "https://127.0.0.1:9090/: $(curl -sk -o /dev/null -w '%{http_code}' https://127.0.0.1:9090/), cockpit.socket $(systemctl is-active cockpit.socket), cockpit.service $(systemctl is-active cockpit.service) (started by the socket); the certificate served: ${served#*=}, the self-signed one cockpit-certificate-ensure made: ${made#*=}" \
    cockpit_tls
password=enagent-lab-$RANDOM
echo "member:$password" | chpasswd
rm -f /run/cockpit-jar
refused_code=$(curl -sk -o /dev/null -w '%{http_code}' -u "member:not-$password" https://127.0.0.1:9090/cockpit/login)
login_code=$(curl -sk -c /run/cockpit-jar -o "$OUT/cockpit-login.json" -w '%{http_code}' -u "member:$password" https://127.0.0.1:9090/cockpit/login)
logged_in() { [ "$refused_code" = 401 ] && [ "$login_code" = 200 ] && grep -qP '\tcockpit\t' /run/cockpit-jar && grep -q csrf-token "$OUT/cockpit-login.json"; }
check cockpit-login "GET /cockpit/login as member (group enagent) with basic auth: $login_code, cookie $(grep -cP '\tcockpit\t' /run/cockpit-jar 2>/dev/null); a wrong password: $refused_code" \
    logged_in
page_served() {  # page_served FILE: the installed page's FILE, through the member's session
    curl -sk -b /run/cockpit-jar -o "/run/cockpit-$1" "https://127.0.0.1:9090/cockpit/@localhost/enagent/$1" && cmp -s "/run/cockpit-$1" "/usr/share/cockpit/enagent/$1"
}
anonymous=$(curl -sk -o /run/cockpit-anonymous.html https://127.0.0.1:9090/cockpit/@localhost/enagent/index.html; cmp -s /run/cockpit-anonymous.html /usr/share/cockpit/enagent/index.html && echo served || echo "not served")
cockpit_page() { page_served manifest.json && page_served index.html && [ "$anonymous" = "not served" ]; }
check cockpit-page "with the login's cookie, /cockpit/@localhost/enagent/{manifest.json,index.html} are the package's files ($(dpkg -S /usr/share/cockpit/enagent/index.html 2>&1)); without it: $anonymous" \
    cockpit_page
fi

step "the journal"
journalctl -o export > /run/journal.export
python3 - "$database" /run/journal.export <<'PY' > /run/journal-keys
import base64, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
journal = open(sys.argv[2], "rb").read()
keys = [key for (key,) in db.execute("SELECT key_data FROM temporary_exposure_key")]
found = [key.hex() for key in keys if key.hex().encode() in journal or key.hex().upper().encode() in journal or base64.b64encode(key) in journal]
print(len(keys), len(found), " ".join(found))
PY
read -r key_count leaked _ < /run/journal-keys
check journal-no-keys "$key_count TEKs looked for in the whole journal (hex, HEX, base64): $leaked found" [ "$leaked" = 0 ]
fields=$(journalctl -u enagentd -o export | grep -a -o '^ENAGENT_[A-Z_]*=' | sort -u | tr -d = | tr '\n' ' ')
check journal-fields "enagentd's entries carry priorities and fields: $fields" sh -c "[ -n '$fields' ] && journalctl -u enagentd -p notice -o cat | grep -q ."
# The consent given earlier (enctl enable), as an administrator finds it: by its MESSAGE_ID.
consent=$(journalctl -u enagentd -o export MESSAGE_ID=e4df84d666ce40ba8fed2d848ad4b854 | grep -a -E '^(PRIORITY|SYSLOG_IDENTIFIER|MESSAGE)=' | sort -u | tr '\n' ' ')
check journal-event "journalctl MESSAGE_ID=e4df84d6… (consent given): $consent" \
    sh -c "echo '$consent' | grep -q 'PRIORITY=5' && echo '$consent' | grep -q 'SYSLOG_IDENTIFIER=enagentd' && echo '$consent' | grep -q 'consent recorded'"
journalctl -u enagentd -u enagent-detect -u enagent-detect.timer -u bluetooth --no-pager -o short-monotonic > "$OUT/journal.txt"

step "a bad enagent.conf"
# RestartPreventExitStatus=64: the configuration error stops the unit (failed, its line in the journal) instead of a restart every 2 s.
cp /etc/enagent/enagent.conf /run/enagent.conf.good
echo 'tx-power = loud' >> /etc/enagent/enagent.conf
bad_line=$(wc -l < /etc/enagent/enagent.conf)
# The journal from here on, by its cursor: the clock steps above make --since unreliable (restarts
# of the watchdog check, stamped after a step back, counted as this one's).
bad_cursor=$(journalctl -u enagentd -n 1 --show-cursor -o cat | sed -n 's/^-- cursor: //p')
systemctl restart enagentd
unit_failed() { [ "$(systemctl is-failed enagentd)" = failed ]; }
wait_for 30 unit_failed; sleep 5  # a restart would have come 2 s after the failure
bad_journal=$(journalctl -u enagentd --after-cursor "$bad_cursor" -o cat | grep -F "/etc/enagent/enagent.conf:$bad_line:" | head -1)
restarts=$(journalctl -u enagentd --after-cursor "$bad_cursor" -o cat | grep -c "Scheduled restart job")
stopped_on_bad_configuration() {
    unit_failed && [ "$(systemctl show -p ExecMainStatus --value enagentd)" = 64 ] && [ "$restarts" = 0 ] && [ -n "$bad_journal" ]
}
check bad-configuration "tx-power = loud on line $bad_line: enagentd.service $(systemctl is-failed enagentd), exit status $(systemctl show -p ExecMainStatus --value enagentd), $restarts restarts scheduled; the journal: \"$bad_journal\"" \
    stopped_on_bad_configuration
cp /run/enagent.conf.good /etc/enagent/enagent.conf
systemctl reset-failed enagentd; systemctl start enagentd

step "systemd-analyze security"
for unit in enagentd.service enagent-detect.service; do
    exposure=$(systemd-analyze security --no-pager "$unit" 2>&1 | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
    check "security-$unit" "systemd-analyze security: exposure $exposure (at most 2.0)" \
        sh -c "[ -n '$exposure' ] && [ \$(echo '$exposure' | awk '{print (\$1 <= 2.0)}') = 1 ]"
done

kill "$BTMON"; sleep 0.5; cp "$BTSNOOP" "$OUT/btmon.snoop"
phase done
if grep -q '"verdict": "FAILED"' "$OUT/phases.jsonl"; then echo 1 > "$OUT/rc"; else echo 0 > "$OUT/rc"; fi
sync
