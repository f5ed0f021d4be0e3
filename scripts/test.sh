#!/usr/bin/env bash
# The test command: installs the test servers the tests run against
# (every scripts/setup-*.sh, each idempotent, into .venv/ and node_modules/),
# then runs the whole test suite.
# What it needs (root or sudo for apt-get, npm, python3 with venv, about
# 10 GB of disk, the registries) is checked first: scripts/check-needs.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/check-needs.sh
for setup in scripts/setup-*.sh; do
  [ -e "$setup" ] || continue
  echo "== $setup" >&2
  bash "$setup"
done
# The library builds without the CLI's crates (issue 15): cheap, and it
# catches a library module that reaches for clap, env_logger & co.
cargo check --no-default-features --lib
cargo test --all-targets "$@"
# The benchmarks' loopback server (a bin behind the `loopback` feature).
cargo test --features loopback --test loopback_bin "$@"
cargo test --doc
