# manifest.sh: sourced by the lab's scripts in the guest (agent-lib.sh, systemd/checks.sh) with OUT set.
# phase NAME [KEY=STRING | KEY:=JSON]...: one line of the run's manifest, OUT/phases.jsonl, which
# the reports read (lab/labframe.py): the phase's name, the guest's clocks now ("realtime": unix
# seconds, as btmon stamps its capture; "monotonic": /proc/uptime) and each KEY's value, a string
# or JSON as it is (an enctl --json answer, a number; null when empty: its command failed).
phase() {
    line="{\"phase\": \"$1\", \"realtime\": $(date +%s.%N), \"monotonic\": $(cut -d' ' -f1 /proc/uptime)"
    shift
    for pair in "$@"; do
        case ${pair%%=*} in
        *:) value=$(printf '%s' "${pair#*=}" | tr '\n' ' '); line="$line, \"${pair%%:=*}\": ${value:-null}" ;;
        *)  value=$(printf '%s' "${pair#*=}" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr '\n\t' '  ')
            line="$line, \"${pair%%=*}\": \"$value\"" ;;
        esac
    done
    printf '%s}\n' "$line" >> "$OUT/phases.jsonl"
}
