#!/usr/bin/env bash
# One "key: value" line per fact about the machine this runs on.
set -u
echo "kernel: $(uname -sr)"
echo "user: $(id -un 2>/dev/null || echo unknown)"
echo "folder: $PWD"
echo "free disk: $(df -Ph . 2>/dev/null | awk 'NR == 2 { print $4 }')"
