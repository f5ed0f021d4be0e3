#!/usr/bin/env bash
# What scripts/test.sh needs from the machine, checked before it installs or
# builds anything: one line for each need that is not met, then exit 1.
# Needs that only matter for an install (apt-get, npm, python3's venv, the
# registries) are checked only when that install has not been done yet.
set -uo pipefail
cd "$(dirname "$0")/.."

missing=()
need() { missing+=("$1"); }

# Debian packages (scripts/setup-chromium.sh, scripts/setup-tmux.sh).
apt_packages=()
command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 \
  || apt_packages+=(chromium chromium-driver)
command -v tmux >/dev/null 2>&1 || apt_packages+=(tmux)
if [ ${#apt_packages[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    need "apt-get: not found; install ${apt_packages[*]} yourself (the tests need them), then run scripts/test.sh again"
  elif [ "$(id -u)" != 0 ] && ! sudo -n true >/dev/null 2>&1; then
    need "root: apt-get must install ${apt_packages[*]}; run as root, with passwordless sudo, or install them yourself"
  fi
fi

# node_modules/ (scripts/setup-mcp-servers.sh).
npm_install=no
[ -f node_modules/@modelcontextprotocol/conformance/dist/index.js ] || npm_install=yes
if [ $npm_install = yes ] && ! command -v npm >/dev/null 2>&1; then
  need "npm: not found; the MCP tests' servers install with npm ci (Debian: apt-get install nodejs npm)"
fi

# .venv/ and .venv-phoenix/ (scripts/setup-llm-katan.sh, scripts/setup-phoenix.sh).
venv_install=no
[ -x .venv/bin/llm-katan ] && [ -x .venv-phoenix/bin/phoenix ] || venv_install=yes
if [ $venv_install = yes ]; then
  if ! command -v python3 >/dev/null 2>&1; then
    need "python3: not found; llm-katan and Phoenix install into virtual environments (Debian: apt-get install python3 python3-venv)"
  elif ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    need "python3-venv: python3 cannot create a virtual environment with pip (Debian: apt-get install python3-venv)"
  fi
fi

# Disk: target/ reaches about 8.6 GB and .venv-phoenix/ about 0.9 GB; what
# is there already counts.
target=${CARGO_TARGET_DIR:-target}
want_kb=$((10 * 1024 * 1024))
have_kb=0
for dir in "$target" .venv .venv-phoenix node_modules; do
  [ -d "$dir" ] && have_kb=$((have_kb + $(du -sk "$dir" 2>/dev/null | cut -f1)))
done
where=.
[ -d "$target" ] && where=$target
free_kb=$(df -Pk "$where" 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -n "$free_kb" ] && [ $((free_kb + have_kb)) -lt $want_kb ]; then
  need "disk: $((free_kb / 1024 / 1024)) GB free for $target and the test servers, about $(((want_kb - have_kb + 1048575) / 1048576)) GB needed (10 GB in all on a fresh clone)"
fi

# The registries, when something is still to be installed.
reachable() {
  if command -v curl >/dev/null 2>&1; then
    curl -sS -o /dev/null -m 15 "$1" 2>/dev/null
  else
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=15)' "$1" >/dev/null 2>&1
  fi
}
check_registry() {
  reachable "$2" || need "network: cannot reach $1 ($2), which the set-up installs from; check the connection or proxy"
}
[ $npm_install = yes ] && check_registry npm https://registry.npmjs.org/
[ $venv_install = yes ] && check_registry PyPI https://pypi.org/simple/
host=$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')
if ! cargo fetch --locked --offline ${host:+--target "$host"} >/dev/null 2>&1; then
  check_registry crates.io https://index.crates.io/config.json
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "scripts/test.sh cannot run on this machine yet:" >&2
  for m in "${missing[@]}"; do echo "  - $m" >&2; done
  exit 1
fi
