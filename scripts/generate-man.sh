#!/bin/sh
# generate-man.sh OUTDIR [SCRATCH]: writes enctl.1 and enagentd.8 into OUTDIR from the commands'
# own help (their --experimental-dump-help), with swift-argument-parser's GenerateManual plugin,
# which builds the package in debug in the Swift build directory SCRATCH (default .build) and
# needs no network. `make man` writes the committed pages in man/; check-man.sh compares them.
#
# The date in the pages is that of debian/changelog's latest entry, so that a page changes only
# when what it says changes. Two fix-ups of the generator's mdoc follow: a blank line in a
# discussion becomes .Pp (man --warnings, and so lintian, reports blank lines), and enagentd(8)
# loses the "subcommand" and the "help" subcommand that the generator copies from
# ArgumentParser's built-in help command, which enagentd, having no subcommands, refuses.
set -eu
OUT=$1
SCRATCH=${2:-.build}
SWIFT=${SWIFT:-swift}
cd "$(dirname "$0")/.."
changelog_date=$(sed -n 's/^ -- .*>  //p' debian/changelog | head -n 1)
date=$(date -u -d "$changelog_date" +%F)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
mkdir -p "$OUT"
for page in enctl.1 enagentd.8; do
    name=${page%.*}
    section=${page##*.}
    # The plugin makes a page for every executable on ArgumentParser, all in one section.
    if ! $SWIFT package --scratch-path "$SCRATCH" plugin generate-manual --configuration debug \
            --section "$section" --date "$date" > "$log" 2>&1; then
        cat "$log" >&2
        echo "generate-man: the GenerateManual plugin failed" >&2
        exit 1
    fi
    generated="$SCRATCH/plugins/GenerateManual/outputs/$name/$page"
    [ -f "$generated" ] || { echo "generate-man: the plugin wrote no $generated" >&2; exit 1; }
    if [ "$name" = enagentd ]; then
        sed -e 's/^$/.Pp/' -e '/^\.Ar subcommand$/d' -e '/^\.It Em help$/,/^\.El$/d' "$generated" > "$OUT/$page"
    else
        sed -e 's/^$/.Pp/' "$generated" > "$OUT/$page"
    fi
done
