#!/usr/bin/env bash
# Install the third-party MCP servers the tests talk to (tests/mcp/test_real_servers.py) into
# .mcp-servers/ (gitignored but for its manifests): the npm servers from its package-lock.json,
# the PyPI ones into a venv of their own. Safe to run again: it only adds what is missing.
# Without npm the npm servers are skipped, and the tests that need them say so.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.mcp-servers"
PYTHON="${PYTHON:-python3}"

if command -v npm >/dev/null 2>&1; then
    if [ ! -x node_modules/.bin/mcp-server-everything ] || [ package-lock.json -nt node_modules ]; then
        echo "    npm servers (everything, filesystem, memory): about 15 s, once"
        npm ci --no-audit --no-fund --loglevel=error
        touch node_modules
    else
        echo "    npm servers: already installed"
    fi
else
    echo "    SKIPPED: the npm MCP servers (npm not found); their tests will be skipped"
fi

if [ ! -x python/bin/mcp-server-git ] || [ ! -x python/bin/mcp-server-time ] ||
    [ requirements.txt -nt python ]; then
    echo "    PyPI servers (mcp-server-git, mcp-server-time): about 30 s, once"
    [ -x python/bin/python ] || "$PYTHON" -m venv python
    python/bin/python -m pip install --quiet --progress-bar off -r requirements.txt
    touch python
else
    echo "    PyPI servers: already installed"
fi
