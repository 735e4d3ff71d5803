#!/usr/bin/env bash
# Usage: report.sh <input.csv> <output.md>
# Writes a Markdown summary of a CSV file: rows, and sum/min/max/mean of every
# numeric column. The title comes from $REPORT_TITLE.
set -euo pipefail
skill_dir="$(cd "$(dirname "$0")/.." && pwd)"

if [[ $# -ne 2 ]]; then
  echo "usage: report.sh <input.csv> <output.md>" >&2
  exit 2
fi
input="$1"
output="$2"
if [[ ! -f "$skill_dir/cache/.ready" ]]; then
  echo "csv-report: not bootstrapped (run: bash scripts/bootstrap.sh)" >&2
  exit 3
fi
if [[ -z "${REPORT_TITLE:-}" ]]; then
  echo "csv-report: REPORT_TITLE is not set (configure it for this skill)" >&2
  exit 4
fi
if [[ ! -r "$input" ]]; then
  echo "csv-report: cannot read \"$input\"" >&2
  exit 5
fi

mkdir -p "$(dirname "$output")"
awk -F',' -v title="$REPORT_TITLE" -v source="$(basename "$input")" '
  function trim(s) { gsub(/^[ \t\r]+|[ \t\r]+$/, "", s); return s }
  NR == 1 {
    columns = NF
    for (i = 1; i <= NF; i++) { name[i] = trim($i); numeric[i] = 1; count[i] = 0 }
    next
  }
  trim($0) == "" { next }
  {
    rows++
    for (i = 1; i <= columns; i++) {
      v = trim($i)
      if (v == "") continue
      count[i]++
      if (v !~ /^-?[0-9]+([.][0-9]+)?$/) { numeric[i] = 0; continue }
      v += 0
      sum[i] += v
      if (!(i in min) || v < min[i]) min[i] = v
      if (!(i in max) || v > max[i]) max[i] = v
    }
  }
  END {
    printf "# %s\n\n", title
    printf "Source: `%s`, %d rows, %d columns.\n\n", source, rows, columns
    print "| column | values | sum | min | max | mean |"
    print "| --- | ---: | ---: | ---: | ---: | ---: |"
    for (i = 1; i <= columns; i++) {
      if (numeric[i] && count[i] > 0) {
        printf "| %s | %d | %.2f | %.2f | %.2f | %.2f |\n", name[i], count[i], sum[i], min[i], max[i], sum[i] / count[i]
      } else {
        printf "| %s | %d | - | - | - | - |\n", name[i], count[i]
      }
    }
  }
' "$input" > "$output"
echo "csv-report: wrote $output"
