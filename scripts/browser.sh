#!/usr/bin/env bash
# Installs headless Chromium (Debian's package) for the tests that open report.html in a real
# browser. Only `make test` needs it; `make demo` does not. Idempotent.
set -euo pipefail

command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "==> installing chromium (apt-get), for the report's browser tests"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
else
  echo "error: the report's browser tests need chromium; install with: sudo apt-get install chromium" >&2
  exit 1
fi
