#!/usr/bin/env bash
# Build the VS Code extension's .vsix: editors/vscode/build.sh [OUT_DIR]
# Installs the locked npm packages (package-lock.json: vscode-languageclient, and @vscode/vsce
# to package) from the npm registry with `npm ci`, then packages reflint-<version>.vsix into
# OUT_DIR (default: editors/vscode/). Needs node >= 20 and npm. Prints the .vsix path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mkdir -p "${1:-$here}" && cd "${1:-$here}" && pwd)"
for tool in node npm; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool not found (the .vsix needs node >= 20 and npm)" >&2; exit 1; }
done
cd "$here"
version="$(node -p 'require("./package.json").version')"
npm ci --no-audit --no-fund --loglevel=error
vsix="$out/reflint-$version.vsix"
npx --no-install vsce package --skip-license --out "$vsix" >/dev/null
echo "$vsix"
