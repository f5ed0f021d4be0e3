#!/usr/bin/env bash
# Installs Arize Phoenix (an OpenTelemetry trace collector and UI, from PyPI)
# into .venv-phoenix/ for tests/otlp_phoenix.rs, which exports a run to it
# over OTLP/HTTP and reads the spans back through its REST API. Large
# (~850 MB); idempotent: does nothing when the pinned version is there.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=20.26.1
if [ -x .venv-phoenix/bin/phoenix ] && .venv-phoenix/bin/pip show arize-phoenix 2>/dev/null | grep -qx "Version: $VERSION"; then
  exit 0
fi
python3 -m venv .venv-phoenix
.venv-phoenix/bin/pip install --quiet --disable-pip-version-check "arize-phoenix==$VERSION"
.venv-phoenix/bin/phoenix --help >/dev/null
