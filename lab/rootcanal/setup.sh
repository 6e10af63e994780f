#!/bin/bash
# setup.sh: the virtual environment of the RootCanal lab (lab/rootcanal), from the pinned
# requirements.txt beside this script, with Debian 12's python3 (python3-venv). Idempotent: an
# environment that already holds exactly these versions is kept.
#
# Usage: lab/rootcanal/setup.sh            (prints the environment's directory)
# Env:   RC_VENV (default: the worktree's .build-rootcanal/venv, ignored by git)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RC_VENV=$(realpath -m "${RC_VENV:-$HERE/../../.build-rootcanal/venv}")
REQ=$HERE/requirements.txt
STAMP=$RC_VENV/.requirements.sha256
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ -x "$RC_VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
  echo "$RC_VENV"; exit 0
fi
PY=${PYTHON:-/usr/bin/python3}
"$PY" -m venv --help > /dev/null 2>&1 || {
  echo "setup.sh: $PY has no venv module (apt-get install python3-venv)" >&2; exit 70; }
mkdir -p "$(dirname "$RC_VENV")"
"$PY" -m venv "$RC_VENV"
"$RC_VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$REQ" >&2
"$RC_VENV/bin/pip" check >&2
echo "$want" > "$STAMP"
echo "$RC_VENV"
