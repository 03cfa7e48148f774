#!/usr/bin/env bash
# promtool check rules | test rules on dashboards/prometheus. Fails (never skips) without promtool.
# usage: promtool_rules.sh check|test SOURCE_DIR
set -euo pipefail
mode=$1
dir=$2/dashboards/prometheus
promtool=$(command -v promtool || true)
if [ -z "$promtool" ]; then
  echo "FAIL: promtool not found: install Debian's prometheus package (scripts/install-deps.sh)" >&2
  exit 1
fi
shopt -s nullglob
cd "$dir"
case $mode in
  check) files=(*.rules.yml) ;;
  test) files=(*.test.yml) ;;
  *) echo "usage: $0 check|test SOURCE_DIR" >&2; exit 2 ;;
esac
if [ ${#files[@]} -eq 0 ]; then
  echo "FAIL: no files for 'promtool $mode rules' in $dir" >&2
  exit 1
fi
"$promtool" "$mode" rules "${files[@]}"
