# manifest.sh: sourced by the lab's scripts in the guest (agent-lib.sh, systemd/checks.sh) with OUT set.
# phase NAME [KEY=STRING | KEY:=JSON]...: one line of the run's manifest, OUT/phases.jsonl, which
# the reports read (lab/labframe.py): the phase's name, the guest's clocks now ("realtime": unix
# seconds, as btmon stamps its capture; "monotonic": /proc/uptime) and each KEY's value, a string
# or JSON as it is (an enctl --json answer, a number; null when empty: its command failed).
# The clocks are read last, just before the line is written: a phase stamped before an action
# (agents.sh's kills, switches and resume) is then stamped as close to it as the shell can. Its
# variables carry its name: a sourced function shares the caller's.
phase() {
    phase_name=$1 phase_fields=
    shift
    for phase_pair in "$@"; do
        case ${phase_pair%%=*} in
        *:) phase_value=$(printf '%s' "${phase_pair#*=}" | tr '\n' ' ')
            phase_fields="$phase_fields, \"${phase_pair%%:=*}\": ${phase_value:-null}" ;;
        *)  phase_value=$(printf '%s' "${phase_pair#*=}" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr '\n\t' '  ')
            phase_fields="$phase_fields, \"${phase_pair%%=*}\": \"$phase_value\"" ;;
        esac
    done
    read -r phase_uptime _ < /proc/uptime
    printf '{"phase": "%s", "realtime": %s, "monotonic": %s%s}\n' "$phase_name" "$(date +%s.%N)" "$phase_uptime" "$phase_fields" >> "$OUT/phases.jsonl"
}
