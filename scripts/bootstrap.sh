#!/usr/bin/env bash
# Prepares a fresh Debian machine for `make demo` / `make test`: system packages, then the venv.
# Idempotent: each step checks before it acts. Called by the Makefile; safe to run by hand.
set -euo pipefail

venv=${1:-.venv}
python=${PYTHON:-python3}

# --- system packages -------------------------------------------------------------------------
# bwrap runs the bubblewrap layer; /usr/bin/python3 runs the tool worker (a non-root uid cannot
# use an interpreter under root's home, and nothing from a home directory is mounted for a tool);
# apparmor_parser checks the hardened container's AppArmor profile (compiled, never loaded).
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
[ -x /usr/sbin/apparmor_parser ] || missing+=(apparmor)
[ -x /usr/bin/python3 ] || missing+=(python3-minimal)
# make rehearse: `ip` brings up the rehearsal's own network namespace; the image stand-in is a
# virtual environment of /usr/bin/python3 (util-linux's unshare and setpriv are essential).
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
/usr/bin/python3 -c 'import venv' >/dev/null 2>&1 || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing ${missing[*]} (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "error: missing ${missing[*]}; install with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

# --- the virtualenv --------------------------------------------------------------------------
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: $python is older than 3.11 (or missing); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "==> creating $venv"
  "$python" -m venv "$venv"
fi
echo "==> installing requirements.txt into $venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements.txt -c requirements.lock
touch "$venv/.installed"
