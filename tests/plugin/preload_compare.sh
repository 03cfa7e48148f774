#!/bin/bash
# Runs PROGRAM without and with LD_PRELOAD=PROBE and checks that the application sees exactly the
# same thing (stdout: return codes, strings, errno; exit code), plus what MODE expects on stderr and
# in the trace directory.
#   MODE plain       no warning, stderr identical, at least MIN_RECORDS records in one ring file
#   MODE unwritable  NCCLSCOPE_DIR=/proc/ncclscope: exactly one warning, no other stderr change
#   MODE fsize       RLIMIT_FSIZE of 64 KiB (SIGXFSZ ignored): exactly one warning
#   MODE badenv      NCCLSCOPE_RING_RECORDS=banana: exactly one warning naming it, still recording
#   MODE disabled    NCCLSCOPE_ENABLE=0: no warning, no ring file
#   MODE rank        RANK/WORLD_SIZE set, as a launcher sets them: as plain, and the presence file
#                    written at load is gone (the first NCCL call replaced it with the ring file)
set -u
program=$1 probe=$2 ring_stats=$3 mode=$4 min_records=${5:-1}
work=$(mktemp -d /tmp/ncclscope-preload-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL ($mode): $*"; echo "--- stderr with probe:"; cat "$work/pre.err"; exit 1; }

run() {  # run OUTPREFIX [env assignments...]
  local prefix=$1; shift
  ( if [ "$mode" = fsize ]; then trap '' XFSZ; ulimit -f 64; fi
    exec env "$@" "$program" ) >"$work/$prefix.out" 2>"$work/$prefix.err"
  echo $? >"$work/$prefix.rc"
}

export NCCLSCOPE_DIR="$work/rings"
run base -u LD_PRELOAD
case $mode in
  unwritable) run pre LD_PRELOAD="$probe" NCCLSCOPE_DIR=/proc/ncclscope ;;
  badenv) run pre LD_PRELOAD="$probe" NCCLSCOPE_RING_RECORDS=banana ;;
  disabled) run pre LD_PRELOAD="$probe" NCCLSCOPE_ENABLE=0 ;;
  rank) run pre LD_PRELOAD="$probe" RANK=0 WORLD_SIZE=1 ;;
  *) run pre LD_PRELOAD="$probe" ;;
esac

diff -u "$work/base.out" "$work/pre.out" || fail "stdout differs with the probe preloaded"
diff "$work/base.rc" "$work/pre.rc" >/dev/null || fail "exit code differs"
warnings=$(grep -c '^ncclscope: warning: ' "$work/pre.err")
grep -v '^ncclscope: warning: ' "$work/pre.err" | diff -u "$work/base.err" - ||
  fail "stderr differs beyond our warnings"
stats=$("$ring_stats" "$work/rings" 2>/dev/null || echo "files=0 records=0 comms=0")
files=$(echo "$stats" | sed -n 's/.*files=\([0-9]*\).*/\1/p')
records=$(echo "$stats" | sed -n 's/.*records=\([0-9]*\).*/\1/p')
presence=$(echo "$stats" | sed -n 's/.*presence=\([0-9]*\).*/\1/p')
case $mode in
  rank)
    [ "$warnings" -eq 0 ] || fail "expected no warning, got $warnings"
    [ "$files" -eq 1 ] || fail "expected one ring file, got $stats"
    [ "${presence:-1}" -eq 0 ] || fail "expected the presence file replaced, got $stats"
    [ "$records" -ge "$min_records" ] || fail "expected >= $min_records records, got $stats" ;;
  plain)
    [ "$warnings" -eq 0 ] || fail "expected no warning, got $warnings"
    [ "$files" -eq 1 ] || fail "expected one ring file, got $stats"
    [ "$records" -ge "$min_records" ] || fail "expected >= $min_records records, got $stats" ;;
  unwritable | fsize)
    [ "$warnings" -eq 1 ] || fail "expected exactly one warning, got $warnings"
    [ "$files" -eq 0 ] || fail "expected no ring file, got $stats" ;;
  badenv)
    [ "$warnings" -eq 1 ] || fail "expected exactly one warning, got $warnings"
    grep -q "NCCLSCOPE_RING_RECORDS='banana'" "$work/pre.err" || fail "warning does not name the variable"
    [ "$records" -ge "$min_records" ] || fail "expected recording to go on, got $stats" ;;
  disabled)
    [ "$warnings" -eq 0 ] || fail "expected no warning, got $warnings"
    [ "$files" -eq 0 ] || fail "expected no ring file, got $stats" ;;
esac
echo "ok ($mode): $(wc -l <"$work/pre.out") identical output lines, $warnings warning(s), $stats"
