#!/usr/bin/env bash
# Builds the console's assets into dist/ (committed; the server compiles them in) from src/
# with the exact package versions of package-lock.json: `console/build.sh`, then rebuild the
# server. Needs Node.js 20+ and npm.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm run build
ls -l dist/
