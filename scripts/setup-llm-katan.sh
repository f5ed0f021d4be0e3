#!/usr/bin/env bash
# Installs llm-katan (a small OpenAI-compatible test server from PyPI) into
# .venv/ for the tests in tests/openai_katan.rs. Idempotent: does nothing
# when the pinned version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=0.22.0
if [ -x .venv/bin/llm-katan ] && .venv/bin/pip show llm-katan 2>/dev/null | grep -qx "Version: $VERSION"; then
  exit 0
fi
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check "llm-katan==$VERSION"
.venv/bin/llm-katan --version
