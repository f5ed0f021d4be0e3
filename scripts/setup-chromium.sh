#!/usr/bin/env bash
# Installs Debian's chromium for the browser tests in tests/view*.rs
# (headless: the page of a finished and of a live run is loaded and its DOM
# asserted on). Idempotent: does nothing when chromium is already installed.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
if ! apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  $SUDO apt-get update -qq
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
chromium --version
