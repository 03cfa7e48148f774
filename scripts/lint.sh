#!/usr/bin/env bash
# Lint: every relative link of the Markdown files resolves (scripts/check_links.py, a second or
# so), .clang-format on every C++ file, clang-tidy (.clang-tidy) on the C++ sources changed in the
# 4 hours of commits before HEAD (all of them when the history is younger). The window is measured
# from HEAD's commit time, not the clock, so one tree always lints the same files, and it spans one
# working session (3 hours): the sessions before were linted by their own landing's CI, and 221
# files (8 hours) took 14.6 min of clang-tidy on 2 cores, most of CI's 35-minute budget. Files whose
# change is only #include lines are left out (below). Needs a configured build dir for
# compile_commands.json. First, and without one, the rooms' include rules (scripts/check-includes.sh).
# Usage: scripts/lint.sh [BUILD_DIR] [BASE_COMMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
head_time=$(git log -1 --format=%ct HEAD)
base=${2:-$(git rev-list -1 --before="$((head_time - 4 * 3600))" HEAD 2>/dev/null || true)}

echo "lint: Markdown links"
python3 scripts/check_links.py

echo "lint: include rules (scripts/include-rules.txt)"
scripts/check-includes.sh

echo "lint: clang-format"
git ls-files '*.cpp' '*.h' '*.cc' '*.hpp' | xargs clang-format --dry-run --Werror

# A file whose only changed lines are #include lines (a room's files moved: their includers name
# the new paths) has no new code for clang-tidy, and the compiler has already checked the paths.
code_changed() {  # path
  local lines
  lines=$(git diff -U0 "$base" HEAD -- "$1" | grep -E '^[-+]' | grep -vE '^(\+\+\+|---) ' || true)
  grep -qvE '^([-+][[:space:]]*(#include[[:space:]].*)?)?$' <<<"$lines"
}
if [ -n "$base" ]; then
  mapfile -t sources < <(git diff --name-only --diff-filter=AM "$base" HEAD -- '*.cpp' '*.cc' |
    while read -r f; do code_changed "$f" && echo "$f"; done)
else
  mapfile -t sources < <(git ls-files '*.cpp' '*.cc')
fi
# Only sources the build compiles have the flags clang-tidy needs. A unity build's database names
# its batches; each source gets its batch's command.
commands="$build/lint-commands"
python3 scripts/per_file_compile_commands.py "$build" "$commands"
mapfile -t sources < <(for f in "${sources[@]}"; do
  grep -q "\"file\": \"$PWD/$f\"" "$commands/compile_commands.json" && echo "$PWD/$f"; done)
echo "lint: clang-tidy on ${#sources[@]} changed source file(s)"
[ ${#sources[@]} -eq 0 ] && exit 0
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$commands" --quiet 2>/dev/null
