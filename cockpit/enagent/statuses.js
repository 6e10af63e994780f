// Written by scripts/check-docs.py --write-cockpit-statuses from README.md's table
// "What each status means" (make check-docs fails when it differs): edit the table, not this file.
window.ENAGENT_STATUSES = {
    "active": {
        "meaning": "advertising and scanning",
        "todo": "nothing"
    },
    "paused": {
        "meaning": "paused until `Paused until`",
        "todo": "`enctl resume` to end it early"
    },
    "disabled": {
        "meaning": "consent was given, then withdrawn",
        "todo": "`enctl enable`"
    },
    "consent-required": {
        "meaning": "never enabled: nothing runs",
        "todo": "`enctl enable`"
    },
    "clock-unsynchronised": {
        "meaning": "waiting for NTP to set the clock before making keys",
        "todo": "start an NTP client (systemd-timesyncd); see `require-synchronised-clock` in enagent.conf(5)"
    },
    "bluetooth-off": {
        "meaning": "bluetoothd is not running, or the adapter is off or blocked by rfkill",
        "todo": "start bluetooth; `rfkill unblock bluetooth`; the journal says which"
    },
    "no-adapter": {
        "meaning": "the configured adapter, or any LE adapter, is missing",
        "todo": "plug it in; check `adapter` in enagent.conf"
    },
    "adapter-connectable": {
        "meaning": "scanning, not advertising: the adapter is connectable",
        "todo": "`btmgmt --index N connectable off`, or a second adapter"
    },
    "adapter-shared": {
        "meaning": "scanning, not advertising: another program advertises on this adapter, which has legacy advertising only",
        "todo": "`btmgmt --index N advinfo` lists the others; a second adapter"
    },
    "waiting-for-interval": {
        "meaning": "scanning, not advertising until a later interval: the clock went back, or restarts used up the day's keys",
        "todo": "nothing: it resumes by itself"
    },
    "store-unwritable": {
        "meaning": "the database cannot be written (a full disk): scanning into memory, not advertising",
        "todo": "free disk space; it resumes by itself"
    },
    "disk-low": {
        "meaning": "advertising and scanning; sightings wait in memory: the disk has less free than the reserve kept for keys and consent",
        "todo": "free disk space, or lower `disk-reserve-mb` in enagent.conf; it resumes by itself"
    },
    "last-interval-unknown": {
        "meaning": "scanning, not advertising: the database cannot say which identifier was last on the air",
        "todo": "see the journal; it retries by itself"
    },
    "store-unreadable": {
        "meaning": "consent and pause cannot be read from the database: nothing runs",
        "todo": "see the journal; it retries every 10 s"
    }
};
