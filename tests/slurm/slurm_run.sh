#!/usr/bin/env bash
# Runs one command against the private Slurm cluster of slurm_fixture.sh
# and checks its outcome (the ctest driver of tests/slurm).
#
# Usage: slurm_run.sh HANDLE SECONDS [checks...] -- COMMAND [ARGS...]
# COMMAND runs with the cluster's SLURM_CONF.
#   HANDLE    the fixture's handle file (its directory holds env)
#   SECONDS   COMMAND is ended (SIGTERM, then SIGKILL 10 s later) after
#             this long; srun and salloc get --time too, in the command
#   checks:
#     --exit CODE            expected exit status (default 0)
#     --expect REGEX         the output (stdout+stderr) matches REGEX
#     --reject REGEX         the output does not match REGEX
#     --count REGEX COUNT    exactly COUNT output lines match REGEX
#     --no-stderr            the tasks write nothing to stderr (srun's own
#                            "srun: ..." lines there are allowed; stdout is
#                            checked as above, stderr is shown apart)
# Exits 0 when every check passes, 1 otherwise, 77 (ctest SKIP_RETURN_CODE)
# when the fixture could not start a cluster on this machine (the reason is
# printed).
set -u
handle=$1
seconds=$2
shift 2
expected_exit=0
expects=()
rejects=()
counts=()
no_stderr=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --exit) expected_exit=$2; shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    --reject) rejects+=("$2"); shift 2 ;;
    --count) counts+=("$3 $2"); shift 3 ;;
    --no-stderr) no_stderr=1; shift ;;
    *) echo "slurm_run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ "${1:-}" = "--" ] || { echo "slurm_run.sh: missing --" >&2; exit 2; }
shift

if [ -f "$handle.skip" ]; then
  echo "SKIP: no Slurm cluster: $(cat "$handle.skip")"
  exit 77
fi
if [ ! -f "$handle" ] || [ ! -f "$(cat "$handle")/env" ]; then
  echo "slurm_run.sh: no cluster recorded in $handle (the fixture test" \
       "slurm.setup did not run or failed)" >&2
  exit 1
fi
dir=$(cat "$handle")
. "$dir/env"
# variables of an outer job or launcher must not reach the tasks
unset PMI_FD PMI_PORT PMI_ID PMI_RANK PMI_SIZE PMI_JOBID PMIX_RANK \
  PMIX_NAMESPACE OMPI_COMM_WORLD_SIZE LCI_ATTR_BOOTSTRAP_BACKEND
for v in $(env | sed -n 's/^\(SLURM_[A-Z_]*\)=.*/\1/p'); do
  [ "$v" = SLURM_CONF ] || unset "$v"
done

out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
echo "slurm_run.sh: + $*"
start=$SECONDS
if [ -n "$no_stderr" ]; then
  timeout -k 10 "$seconds" "$@" > "$out" 2> "$err"
else
  timeout -k 10 "$seconds" "$@" > "$out" 2>&1
fi
status=$?
cat "$out"
if [ -s "$err" ]; then
  echo "slurm_run.sh: stderr:"
  cat "$err"
fi
echo "slurm_run.sh: exit status $status after $((SECONDS - start)) s"

ok=1
elapsed=$((SECONDS - start))
# timeout's 124 (or 137 after its SIGKILL); srun's own 137 (a task killed)
# comes early
if { [ "$status" = 124 ] || [ "$status" = 137 ]; } && [ "$elapsed" -ge "$seconds" ]; then
  echo "slurm_run.sh: FAIL: did not end within $seconds s"
  ok=0
elif [ "$expected_exit" = nonzero ]; then
  [ "$status" != 0 ] || { echo "slurm_run.sh: FAIL: exit 0, expected nonzero"; ok=0; }
elif [ "$status" != "$expected_exit" ]; then
  echo "slurm_run.sh: FAIL: exit $status, expected $expected_exit"
  ok=0
fi
if [ -n "$no_stderr" ] && grep -qv '^srun: ' "$err"; then
  echo "slurm_run.sh: FAIL: the tasks wrote to stderr"
  ok=0
fi
for re in "${expects[@]}"; do
  grep -Eq -- "$re" "$out" || { echo "slurm_run.sh: FAIL: no output matches '$re'"; ok=0; }
done
for re in "${rejects[@]}"; do
  if grep -Eq -- "$re" "$out"; then
    echo "slurm_run.sh: FAIL: output matches '$re'"
    ok=0
  fi
done
for c in "${counts[@]}"; do
  n=${c%% *}
  re=${c#* }
  got=$(grep -Ec -- "$re" "$out")
  [ "$got" = "$n" ] || { echo "slurm_run.sh: FAIL: $got lines match '$re', expected $n"; ok=0; }
done
[ "$ok" = 1 ] && { echo "slurm_run.sh: PASS"; exit 0; }
# the daemons' view of what went wrong
for f in "$dir"/log/slurmd.log "$dir"/log/slurmctld.log; do
  [ -f "$f" ] && { echo "--- $f (last 20 lines)"; tail -n 20 "$f"; }
done
exit 1
