#!/usr/bin/env bash
# Node digests at scale (docs/performance.md, "Node digests at scale"), on one machine:
#  1. the exporter's cost of /digest on one node: 8 wrapped rings of the default 65536 slots, the
#     node's digest built 20 times (digest_scale_bench node);
#  2. a live 4096-rank job on 512 simulated nodes of 8 ranks with one culprit (rank 2051 never
#     issues tp allreduce #N): every node's rings written through RingWriter, its digest built as
#     the exporter builds it, and served on its own loopback port (digest_scale_bench serve, in
#     the background);
#  3. the correlating instance's cycle, CYCLES times (default 5): fetch the 512 digests in
#     parallel, decode, index, correlate, each timed; the headline must name the culprit;
#  4. the same through the CLI, `ncclscope analyze --from HOSTFILE --timing`, under /usr/bin/time.
# Prints the load average before and after (the machine is shared). Exit code 1 when a headline
# misses the culprit or the cycle misses its target (1 s median), 2 when something cannot run.
# Usage: bench/run_digest_scale_bench.sh [serve options: --records N --ring N --hang-age S ...]
# BUILD_DIR overrides the build directory (default: the repository's build/, built under the
# lock /tmp/ncclscope-build.lock as every build of it is).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
cycles=${CYCLES:-5}

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$repo" -B "$build" -G Ninja >/dev/null
fi
flock /tmp/ncclscope-build.lock cmake --build "$build" --target digest_scale_bench ncclscope -j2 >/dev/null
bench=$build/bin/digest_scale_bench

# One listening socket per simulated node, plus the fetches' connections.
ulimit -n 4096 2>/dev/null || true
work=$(mktemp -d /tmp/ncclscope-digest-scale-XXXX)
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "load average (1, 5, 15 min) before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== 1. one node: /digest from 8 full rings of the default size"
"$bench" node --builds 20 --dir "$work"

echo "== 2. 512 nodes: rings written, digests built, served on loopback ports"
"$bench" serve --hostfile "$work/hosts" --dir "$work" "$@" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 1200); do
  [ -f "$work/hosts" ] && break
  if ! kill -0 "$server" 2>/dev/null; then
    cat "$work/serve.log"
    echo "FAILED: the server stopped before serving" >&2
    exit 2
  fi
  sleep 0.5
done
cat "$work/serve.log"
[ -f "$work/hosts" ] || { echo "FAILED: no hostfile after 10 minutes" >&2; exit 2; }
read -r _ _ _ culprit _ _ seq < <(grep '^culprit:' "$work/serve.log")
seq=${seq#\#}

echo "== 3. the correlating cycle, $cycles times (load before: $(cut -d' ' -f1-3 /proc/loadavg))"
rc=0
"$bench" correlate --from "$work/hosts" --culprit "$culprit" --seq "$seq" --cycles "$cycles" || rc=$?
failed=0
if [ "$rc" -ne 0 ]; then failed=1; fi

echo "== 4. ncclscope analyze --from $work/hosts --timing"
arc=0
/usr/bin/time -v "$build/bin/ncclscope" analyze --from "$work/hosts" --timing \
  >"$work/analyze.txt" 2>"$work/time.txt" || arc=$?
head -1 "$work/analyze.txt"
grep '^timing:' "$work/time.txt" || true
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
         for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$work/time.txt")
rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt")
echo "analyze: exit code $arc, wall $wall s, max RSS $((rss / 1024)) MiB"
# A live hang not yet confirmed: the suspect's headline names the culprit on tp.
if ! head -1 "$work/analyze.txt" | grep -q "(missing) comm tp .*#$seq: rank $culprit never issued it"; then
  echo "FAILED: analyze --from does not name rank $culprit on tp #$seq first"
  failed=1
fi
echo "load average (1, 5, 15 min) after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$failed"
