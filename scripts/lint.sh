#!/usr/bin/env bash
# Lint: .clang-format on every C++ file, clang-tidy (.clang-tidy) on the C++ sources changed in the
# last day of commits (all of them when the history is younger). Needs a configured build dir for
# compile_commands.json. Usage: scripts/lint.sh [BUILD_DIR] [BASE_COMMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
base=${2:-$(git rev-list -1 --before='24 hours ago' HEAD 2>/dev/null || true)}

echo "lint: clang-format"
git ls-files '*.cpp' '*.h' '*.cc' '*.hpp' | xargs clang-format --dry-run --Werror

if [ -n "$base" ]; then
  mapfile -t sources < <(git diff --name-only --diff-filter=AM "$base" HEAD -- '*.cpp' '*.cc')
else
  mapfile -t sources < <(git ls-files '*.cpp' '*.cc')
fi
# Only sources the build compiles have the flags clang-tidy needs.
mapfile -t sources < <(for f in "${sources[@]}"; do
  grep -q "\"file\": \"$PWD/$f\"" "$build/compile_commands.json" && echo "$PWD/$f"; done)
echo "lint: clang-tidy on ${#sources[@]} changed source file(s)"
[ ${#sources[@]} -eq 0 ] && exit 0
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet 2>/dev/null
