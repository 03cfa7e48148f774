#!/usr/bin/env bash
# scripts/check-includes.sh on a small tree of rooms: it names file and line of each include a rule
# forbids, and only those; the longest room's rule wins; a rules file naming no folder is refused.
# Then the repository itself, so ctest fails too when an include breaks scripts/include-rules.txt.
set -euo pipefail
check=$(cd "$(dirname "$0")/../.." && pwd)/scripts/check-includes.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp/tree/core/low" "$tmp/tree/core/high" "$tmp/tree/base" "$tmp/tree/other"
cd "$tmp/tree"
printf '#include <vector>\n#include "base/b.h"\n#include "core/high/h.h"\n#include "low_local.h"\n' \
  > core/low/l.cpp                                            # line 3 breaks "core/low: base"
printf '#include "core/low/l.h"\n#include "base/b.h"\n' > core/high/h.cpp   # allowed by "core: base"
printf '#pragma once\n' > core/low/l.h
printf '#pragma once\n' > core/high/h.h
printf '#pragma once\n' > base/b.h
printf '#include "core/high/h.h"\n' > other/o.cpp                          # under no rule
printf '# rules\ncore: base\ncore/low: base\n' > rules.txt
git init -q . && git add -A

set +e
out=$("$check" rules.txt .); rc=$?
set -e
[ $rc -eq 1 ] || fail "a violation exits 1, got $rc: $out"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "exactly one violation expected: $out"
case $out in "core/low/l.cpp:3: includes core/high/h.h; core/low may include only from core/low, base"*) ;;
  *) fail "file:line and the rule expected: $out" ;; esac

# The same tree without git (a source tarball) gives the same answer.
rm -rf .git
set +e
out2=$("$check" rules.txt .); rc=$?
set -e
[ $rc -eq 1 ] && [ "$out2" = "$out" ] || fail "without git: rc $rc, $out2"

printf 'core/lwo: base\n' > typo.txt
set +e
"$check" typo.txt . 2>/dev/null; rc=$?
set -e
[ $rc -eq 2 ] || fail "a rule naming no folder exits 2, got $rc"

printf 'core/low: base core/high\n' > loose.txt
"$check" loose.txt . || fail "an allowed room is no violation"

"$check" || fail "the repository breaks scripts/include-rules.txt (above)"
echo "include rules: ok"
