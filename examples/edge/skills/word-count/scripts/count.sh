#!/usr/bin/env bash
# Counts lines, words and characters of a file, then its ten most frequent words.
set -euo pipefail
file=${1:?usage: count.sh <file>}
read -r lines words chars < <(wc -lwm < "$file")
echo "lines: $lines"
echo "words: $words"
echo "characters: $chars"
echo "most frequent:"
tr -cs '[:alnum:]' '\n' < "$file" | tr '[:upper:]' '[:lower:]' | grep -v '^$' |
  sort | uniq -c | sort -k1,1nr -k2,2 | head -n 10 | awk '{ printf "  %s %s\n", $1, $2 }'
