#!/usr/bin/env bash
# Installs tmux (Debian package) for tests/live_view.rs, which runs the CLI
# in a real terminal and captures its screen. Idempotent: does nothing when
# tmux is already installed.
set -euo pipefail
if command -v tmux >/dev/null 2>&1; then
  exit 0
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq tmux
tmux -V
