#!/usr/bin/env bash
# Prepares the csv-report skill once: checks its tools and marks it ready.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v awk >/dev/null || { echo "csv-report: awk is required" >&2; exit 1; }
mkdir -p cache
{
  echo "ready"
  date -u +"%Y-%m-%dT%H:%M:%SZ"
} > cache/.ready
echo "csv-report: ready"
