#!/usr/bin/env bash
# Prepares a fresh Debian machine: system packages, then the venv. Called by the Makefile; safe
# to run by hand. Idempotent: each step checks before it acts.
#
#   scripts/bootstrap.sh [VENV] [local|dev]
#
# local: what running a case needs (`make demo`, `make bench`): bubblewrap, the system
#        interpreter, requirements-local.txt.
# dev:   (the default) everything else as well, for `make test`, `make lint`, the Pulumi program
#        and the rehearsal: apparmor, iproute2, python3-venv, strace, requirements.txt.
set -euo pipefail

venv=${1:-.venv}
set_name=${2:-dev}
python=${PYTHON:-python3}
case "$set_name" in
  local) requirements=requirements-local.txt ;;
  dev) requirements=requirements.txt ;;
  *) echo "error: unknown set '$set_name'; use local or dev" >&2; exit 2 ;;
esac

# --- system packages -------------------------------------------------------------------------
# bwrap runs the bubblewrap layer; /usr/bin/python3 runs the tool worker (a non-root uid cannot
# use an interpreter under root's home, and nothing from a home directory is mounted for a tool).
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
[ -x /usr/bin/python3 ] || missing+=(python3-minimal)
if [ "$set_name" = dev ]; then
  # apparmor_parser checks the hardened container's AppArmor profile (compiled, never loaded).
  [ -x /usr/sbin/apparmor_parser ] || missing+=(apparmor)
  # make rehearse: `ip` brings up the rehearsal's own network namespace; the image stand-in is a
  # virtual environment of /usr/bin/python3 (util-linux's unshare and setpriv are essential).
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  # nft applies the analyst pods' egress policy to the rehearsal's network namespace.
  [ -x /usr/sbin/nft ] || missing+=(nftables)
  /usr/bin/python3 -c 'import venv' >/dev/null 2>&1 || missing+=(python3-venv)
  # The tests watch the controller's entry point install its signal handlers first.
  command -v strace >/dev/null 2>&1 || missing+=(strace)
fi
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
echo "==> installing $requirements into $venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" -c requirements.lock
# The development set holds the local one: both are in place.
touch "$venv/.installed-local"
if [ "$set_name" = dev ]; then
  touch "$venv/.installed"
fi
