#!/usr/bin/env bash
# Prints the folder SwiftPM puts this package's debug binaries in.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" && swift build --show-bin-path "$@" 2>/dev/null
