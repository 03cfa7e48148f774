#!/bin/bash
# The presence file libncclscope.so writes as it loads, in real processes: a process its launcher
# started as a rank writes one, processes it starts do not, a process without a rank does not, a
# normal exit marks it finished.
# Usage: presence_check.sh PROBE RING_STATS
set -u
probe=$1 ring_stats=$2
work=$(mktemp -d /tmp/ncclscope-presence-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
presences() { ls "$1" 2>/dev/null | grep -c -- '-presence\.ring$'; }

# A rank (its parent, this script, has no rank) runs two helpers that inherit its environment: the
# outer shell writes one file under its own pid; `ls` and the inner shell, started by it, none.
rank=$work/rank
# (bash, whose exit runs the exit handlers; dash leaves with _exit. `exit 0` last, so that bash does
# not exec its last command in its own place.)
LD_PRELOAD=$probe NCCLSCOPE_DIR=$rank RANK=3 WORLD_SIZE=4 NCCLSCOPE_HOST=nodeA \
  bash -c 'echo $$ >"$1/pid"; bash -c "ls \"$2\"" >"$1/during"; exit 0' bash "$work" "$rank" ||
  fail "the preloaded shell failed"
pid=$(cat "$work/pid")
[ "$(cat "$work/during")" = "nodeA-$pid-presence.ring" ] ||
  fail "expected only nodeA-$pid-presence.ring while the rank ran, saw: $(cat "$work/during")"
stats=$("$ring_stats" "$rank")
[ "$stats" = "files=1 records=0 comms=0 presence=1 finished=1" ] ||
  fail "expected one presence file marked finished after the exit, got: $stats"

# A program that execs another in its place (same pid, a new image that loads the library again):
# still one file.
exec_dir=$work/exec
LD_PRELOAD=$probe NCCLSCOPE_DIR=$exec_dir RANK=1 WORLD_SIZE=2 \
  bash -c 'exec bash -c "ls \"$1\" >\"$2/exec-during\"; exit 0"' bash "$exec_dir" "$work" ||
  fail "the preloaded shell failed"
[ "$(grep -c -- '-presence\.ring$' "$work/exec-during")" -eq 1 ] ||
  fail "expected one presence file after an exec, saw: $(cat "$work/exec-during")"

# A rank that set RANK itself (as a script under mpirun does for torch.distributed): the process it
# starts has RANK where the rank's own start had only Open MPI's variables; it is still its helper.
mpi=$work/mpi
LD_PRELOAD=$probe NCCLSCOPE_DIR=$mpi OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=4 \
  sh -c 'RANK=2 WORLD_SIZE=4 sh -c true' || fail "the preloaded shell failed"
[ "$(presences "$mpi")" -eq 1 ] || fail "expected one presence file, got: $(ls "$mpi")"

# No rank from a launcher, or no job size: no file.
none=$work/none
LD_PRELOAD=$probe NCCLSCOPE_DIR=$none sh -c true || fail "the preloaded shell failed"
LD_PRELOAD=$probe NCCLSCOPE_DIR=$none RANK=1 sh -c true || fail "the preloaded shell failed"
[ ! -e "$none" ] || [ "$(ls -A "$none")" = "" ] || fail "expected no file, got: $(ls "$none")"

# Switched off.
off=$work/off
LD_PRELOAD=$probe NCCLSCOPE_DIR=$off RANK=1 WORLD_SIZE=2 NCCLSCOPE_PRESENCE=0 sh -c true ||
  fail "the preloaded shell failed"
[ ! -e "$off" ] || [ "$(ls -A "$off")" = "" ] || fail "NCCLSCOPE_PRESENCE=0 wrote: $(ls "$off")"
echo "ok"
