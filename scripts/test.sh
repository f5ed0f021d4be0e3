#!/usr/bin/env bash
# The test command: installs the test servers the tests run against
# (every scripts/setup-*.sh, each idempotent, into .venv/ and node_modules/),
# then runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
for setup in scripts/setup-*.sh; do
  [ -e "$setup" ] || continue
  echo "== $setup" >&2
  bash "$setup"
done
cargo test --all-targets "$@"
cargo test --doc
