#!/usr/bin/env bash
# Installs Debian's chromium and chromium-driver (WebDriver) for the
# browser tests in tests/view*.rs: the page of a finished and of a live run
# is loaded headless and its DOM asserted on. Idempotent: does nothing when
# both are installed; runs apt-get update only when a package is unknown.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
if ! apt-cache policy chromium-driver 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  $SUDO apt-get update -qq
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  chromium chromium-driver fonts-dejavu-core >/dev/null
chromium --version
