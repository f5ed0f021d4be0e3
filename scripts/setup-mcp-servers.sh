#!/usr/bin/env bash
# Installs the reference MCP servers the tests run against, and the MCP
# client conformance suite (@modelcontextprotocol/conformance 0.1.10, the
# newest that runs on Node 20), into node_modules/ at the repository root,
# pinned by package-lock.json.
# Idempotent: does nothing when the pinned versions are already there.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  echo "setup-mcp-servers: npm is not installed (apt-get install nodejs npm)" >&2
  exit 1
fi
want_everything=node_modules/@modelcontextprotocol/server-everything/dist/index.js
want_filesystem=node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
want_conformance=node_modules/@modelcontextprotocol/conformance/dist/index.js
if [ -f "$want_everything" ] && [ -f "$want_filesystem" ] && [ -f "$want_conformance" ] \
   && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
