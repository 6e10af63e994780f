# cached-root.sh, sourced by scripts/trixie-root.sh and lab/trixie-guest.sh (bash): what their cached
# Debian roots share.

# install_missing NAME ROOT LOG PACKAGE...: a root cached before a package joined its list gets it
# now (apt in the root, its output in LOG); NAME says whose root it is in the messages.
install_missing() {
    local name=$1 root=$2 log=$3 package missing=""
    shift 3
    for package in "$@"; do
        chroot "$root" dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $package"
    done
    [ -n "$missing" ] || return 0
    echo "$name: installing into $root:$missing" >&2
    mount -t proc proc "$root/proc"
    chroot "$root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends$missing && apt-get clean" \
        > "$log" 2>&1 || { umount "$root/proc"; tail -20 "$log" >&2; echo "$name: installing$missing failed" >&2; return 1; }
    umount "$root/proc"
}
