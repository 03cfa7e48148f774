#!/usr/bin/env bash
# Fails on an #include that breaks the rooms' dependency rules (scripts/include-rules.txt, format
# there), printing file:line of each, so a dependency the design forbids never lands unnoticed.
# One grep over the ruled rooms' files and one awk pass: well under a second on the whole tree.
# Usage: scripts/check-includes.sh [RULES_FILE] [TREE]   (defaults: the repository's rules and root)
# Exit status: 0 clean, 1 a violation, 2 a rules file that cannot be used.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shown=${1:-scripts/include-rules.txt}  # as the messages name it
rules=$(realpath "${1:-$here/scripts/include-rules.txt}")
tree=${2:-$here}
cd "$tree"

[ -r "$rules" ] || { echo "check-includes: cannot read $rules" >&2; exit 2; }

# The files: tracked ones in a git tree, every file otherwise (a source tarball).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list_files() { git ls-files -- "$@"; }
else
  list_files() { find "$@" -type f 2>/dev/null | sed 's|^\./||' | sort -u; }
fi

# The rooms the rules name, checked against the tree so a misspelt room fails instead of passing.
ruled_text=$(awk -v rules="$rules" '
  /^[[:space:]]*(#|$)/ { next }
  {
    if (index($0, ":") == 0) { printf "%s:%d: no colon: %s\n", rules, NR, $0 > "/dev/stderr"; bad = 1; next }
    room = substr($0, 1, index($0, ":") - 1); gsub(/[[:space:]]/, "", room); print room
  }
  END { exit bad }' "$rules") || exit 2
ruled=()
[ -n "$ruled_text" ] && mapfile -t ruled <<<"$ruled_text"
for room in "${ruled[@]}"; do
  [ -d "$room" ] || { echo "check-includes: $rules names $room, which is no folder of $tree" >&2; exit 2; }
done
[ ${#ruled[@]} -eq 0 ] && exit 0

# Our top-level folders: a quoted include starting with one of them is ours, anything else is a
# system or third-party header.
tops=$(list_files . | awk -F/ 'NF > 1 { print $1 }' | sort -u | tr '\n' ' ')

mapfile -t files < <(list_files "${ruled[@]}" | grep -E '\.(h|hpp|cpp|cc|cu|cuh)$' || true)
[ ${#files[@]} -eq 0 ] && exit 0

# grep exits 1 on a batch without quoted includes: that is no error.
{ printf '%s\n' "${files[@]}" | xargs -d '\n' grep -nHE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' || true; } |
  awk -v rules="$rules" -v shown="$shown" -v tops="$tops" '
    BEGIN {
      n = split(tops, t, " "); for (i = 1; i <= n; i++) ours[t[i]] = 1
      while ((getline line < rules) > 0) {
        if (line ~ /^[[:space:]]*(#|$)/) continue
        room = substr(line, 1, index(line, ":") - 1); gsub(/[[:space:]]/, "", room)
        allowed[room] = room " " substr(line, index(line, ":") + 1)
      }
    }
    # The rule of the longest room holding `path`, "" when none does.
    function rule_of(path,    r, best) {
      best = ""
      for (r in allowed) if (index(path, r "/") == 1 && length(r) > length(best)) best = r
      return best
    }
    {
      # grep -nH: file:line:text
      file = $0; sub(/:.*/, "", file)
      rest = substr($0, length(file) + 2); lineno = rest; sub(/:.*/, "", lineno)
      inc = rest; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
      top = inc; sub(/\/.*/, "", top)
      if (!(top in ours) || index(inc, "/") == 0) next
      room = rule_of(file)
      if (room == "") next
      m = split(allowed[room], ok, " ")
      for (i = 1; i <= m; i++) if (index(inc, ok[i] "/") == 1) next
      list = allowed[room]; gsub(/[[:space:]]+/, ", ", list); sub(/, $/, "", list)
      printf "%s:%s: includes %s; %s may include only from %s (%s)\n",
             file, lineno, inc, room, list, shown
      bad = 1
    }
    END { exit bad }'
