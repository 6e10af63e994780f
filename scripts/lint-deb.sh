#!/bin/sh
# lint-deb.sh DEB: lintian on the package; fails on an error (E:), prints the rest. The package
# needs no override since its binaries carry no ICU (whose locale names lintian took for misspellings).
set -eu
DEB=$1
[ -f "$DEB" ] || { echo "lint-deb: no $DEB (make deb builds it)" >&2; exit 1; }
# --fail-on error: warnings and infos (-I) are printed, only errors fail (`lintian -i` explains a tag).
if lintian --fail-on error --display-info "$DEB"; then
    echo "lint-deb: no lintian error in $DEB"
else
    echo "lint-deb: FAIL (lintian errors above)"
    exit 1
fi
