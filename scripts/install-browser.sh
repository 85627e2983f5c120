#!/usr/bin/env bash
# Chromium for the web panel's browser test, from Debian's apt (never `npx playwright install`): playwright-core
# drives it at /usr/bin/chromium. Does nothing when it is already there.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "install-browser: chromium is missing and this user cannot install it: run 'apt-get install chromium' as root" >&2
    exit 1
  fi
else SUDO=""; fi
echo "install-browser: installing chromium from apt" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null
