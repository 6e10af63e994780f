# cached-root.sh, sourced by scripts/trixie-root.sh, scripts/trixie-cockpit-root.sh and
# lab/trixie-guest.sh (bash): what their cached Debian roots share.
CACHED_ROOT_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# make_trixie_root NAME ROOT LOG WHAT PACKAGE...: ROOT made, unless whole already: debootstrap
# trixie (minbase, from $MIRROR), then PACKAGE... without their Recommends, logged in
# LOG-debootstrap.log and LOG-apt.log; WHAT says in the message what comes after debootstrap. The
# marker written last says the root is whole, so a root left half-made is never used. Called as a
# plain command of a `set -e` script, so that any step that fails ends it.
make_trixie_root() {
    local name=$1 root=$2 log=$3 what=$4
    shift 4
    [ ! -e "$root/.complete" ] || return 0
    [ "$(id -u)" = 0 ] || { echo "$name: making the root needs root (debootstrap, chroot)" >&2; return 1; }
    "$CACHED_ROOT_SCRIPTS/install-deps.sh" debootstrap
    echo "$name: making $root (debootstrap trixie, then $what)" >&2
    rm -rf "$root.partial"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase trixie "$root.partial" "$MIRROR" > "$log-debootstrap.log" 2>&1 \
        || { tail -20 "$log-debootstrap.log" >&2; echo "$name: debootstrap failed" >&2; return 1; }
    mount -t proc proc "$root.partial/proc"
    trap "umount '$root.partial/proc' 2>/dev/null || true" EXIT
    chroot "$root.partial" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $*" \
        > "$log-apt.log" 2>&1 || { tail -20 "$log-apt.log" >&2; echo "$name: installing its packages failed (log: $log-apt.log)" >&2; return 1; }
    chroot "$root.partial" apt-get clean
    umount "$root.partial/proc"
    trap - EXIT
    touch "$root.partial/.complete"
    rm -rf "$root"
    mv "$root.partial" "$root"
}

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
