#!/bin/sh
# interface-xml.sh BIN: writes dbus/org.enagent.ExposureNotification1.xml from what enagentd in
# BIN serves (run after changing the API; a test checks that the file and the daemon agree).
set -eu
BIN=$1
DIR=$(mktemp -d)
DAEMON=
trap '[ -z "$DAEMON" ] || kill $DAEMON 2>/dev/null; kill $(cat "$DIR/bus.pid") 2>/dev/null; rm -rf "$DIR"' EXIT
dbus-daemon --session --address="unix:path=$DIR/bus" --fork --print-pid > "$DIR/bus.pid"
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$DIR/bus"
"$BIN/enagentd" --state-dir "$DIR/state" --no-radio --no-require-synchronised-clock 2> "$DIR/log" & DAEMON=$!
for _ in $(seq 50); do
    if dbus-send --system --print-reply=literal --dest=org.enagent.ExposureNotification1 /org/enagent/ExposureNotification1 \
        org.freedesktop.DBus.Introspectable.Introspect > "$DIR/xml" 2>/dev/null; then
        sed -e '1s/^ *//' -e '$a\' "$DIR/xml" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' > dbus/org.enagent.ExposureNotification1.xml
        echo "dbus/org.enagent.ExposureNotification1.xml written"
        exit 0
    fi
    sleep 0.1
done
cat "$DIR/log"; exit 1
