#!/bin/sh
# Runs a program under a launcher and checks the outcome (ctest driver of
# the launcher tests, tests/launchers/CMakeLists.txt).
#
# Usage: run.sh LAUNCHER NRANKS SECONDS [checks...] -- PROGRAM [ARGS...]
#   LAUNCHER   lcrun=PATH | hydra | hydra-port | mpirun
#   SECONDS    the launcher's own timeout; the whole run must end within
#              SECONDS + 10 (an outer `timeout` enforces it)
#   checks:
#     --exit CODE|nonzero     expected exit status (default 0)
#     --expect REGEX          the output (stdout+stderr) matches REGEX
#     --count REGEX COUNT     exactly COUNT output lines match REGEX
#     --env NAME=VALUE        set in the ranks' environment (repeatable)
#     --backend NAME|default  the network backend (LCI_ATTR_BACKEND);
#                             default: leave the variable unset, so the
#                             library's default runs (without the option:
#                             ofi, unless the environment sets one)
#     --no-stderr             the run writes nothing to stderr (stdout is
#                             checked as above; stderr is shown apart)
#     --private-shm           the launcher runs with a private, empty
#                             /dev/shm (a tmpfs in its own mount namespace);
#                             anything left in it at the end fails the test
# Exits 0 when every check passes, 1 otherwise, 77 (ctest SKIP_RETURN_CODE)
# when the launcher or the program is not installed/built.
#
# Everything stays on this machine: hydra uses -iface lo, mpirun keeps its
# out-of-band channel on lo, both run in a private loopback-only network
# namespace (tools/lo-netns: their control ports listen on every
# interface), and LCI uses libfabric's shm provider unless
# LCI_ATTR_OFI_PROVIDER_NAME says otherwise.
netns=$(dirname "$0")/../../tools/lo-netns
launcher=$1
nranks=$2
seconds=$3
shift 3

expected_exit=0
backend_given=""
no_stderr=""
private_shm=""
expects=""
counts=""
nl='
'
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --exit) expected_exit=$2; shift 2 ;;
    --expect) expects="$expects$2$nl"; shift 2 ;;
    --count) counts="$counts$3 $2$nl"; shift 3 ;;
    --env) export "$2"; shift 2 ;;
    --no-stderr) no_stderr=1; shift ;;
    --private-shm) private_shm=1; shift ;;
    --backend)
      if [ "$2" = default ]; then
        unset LCI_ATTR_BACKEND
        backend_given=default
      else
        LCI_ATTR_BACKEND=$2
        export LCI_ATTR_BACKEND
        backend_given=$2
      fi
      shift 2
      ;;
    *) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ "$1" = "--" ] && shift
[ $# -ge 1 ] || { echo "run.sh: missing the program" >&2; exit 2; }

skip() {
  echo "SKIP: $*"
  exit 77
}

: "${LCI_ATTR_OFI_PROVIDER_NAME:=shm}"
export LCI_ATTR_OFI_PROVIDER_NAME
if [ -z "${backend_given:-}" ]; then
  : "${LCI_ATTR_BACKEND:=ofi}"
  export LCI_ATTR_BACKEND
fi

[ -x "$1" ] || skip "$1 is not built"

case $launcher in
  lcrun=*)
    lcrun=${launcher#lcrun=}
    [ -x "$lcrun" ] || skip "lcrun ($lcrun) is not built"
    set -- "$lcrun" -n "$nranks" --timeout "$seconds" -- "$@"
    ;;
  hydra | hydra-port)
    hydra=${LCI_TEST_MPIEXEC_HYDRA:-/usr/bin/mpiexec.hydra}
    [ -x "$hydra" ] || skip "MPICH's $hydra is not installed (apt-get install mpich)"
    port=""
    [ "$launcher" = hydra-port ] && port=-pmi-port
    MPIEXEC_TIMEOUT=$seconds
    export MPIEXEC_TIMEOUT
    # hydra leaves SIGPIPE at its default: when a rank dies while hydra
    # writes a PMI reply to it, hydra itself is killed silently (status
    # 141). Ignored here (inherited through exec), the write fails with
    # EPIPE and hydra reports the dead rank and ends the job.
    trap '' PIPE
    set -- "$netns" "$hydra" -iface lo $port -n "$nranks" "$@"
    ;;
  mpirun)
    mpirun=${LCI_TEST_MPIRUN:-/usr/bin/mpirun.openmpi}
    [ -x "$mpirun" ] || skip "Open MPI's $mpirun is not installed (apt-get install openmpi-bin)"
    root=""
    [ "$(id -u)" = 0 ] && root=--allow-run-as-root
    set -- "$netns" "$mpirun" $root --oversubscribe --bind-to none \
      --mca oob_tcp_if_include lo --timeout "$seconds" -n "$nranks" "$@"
    ;;
  *)
    echo "run.sh: unknown launcher '$launcher'" >&2
    exit 2
    ;;
esac

errfile=$(mktemp)
shmfile=$(mktemp)
trap 'rm -f "$errfile" "$shmfile"' EXIT
if [ -n "$private_shm" ]; then
  unshare -m true 2>/dev/null || skip "no private mount namespace here (unshare -m needs root)"
  # the launcher and every rank see an empty tmpfs on /dev/shm; what is
  # left in it when the launcher ends is listed into $shmfile
  set -- unshare -m sh -c 'mount -t tmpfs -o size=1g lci-test-shm /dev/shm || exit 125
f=$1; shift
"$@"; rc=$?
ls -A /dev/shm > "$f"
exit $rc' run-shm "$shmfile" "$@"
fi
echo "run.sh: + $*"
start=$(date +%s)
if [ -n "$no_stderr" ]; then
  output=$(timeout -k 5 $((seconds + 10)) "$@" 2>"$errfile")
else
  output=$(timeout -k 5 $((seconds + 10)) "$@" 2>&1)
fi
status=$?
elapsed=$(($(date +%s) - start))
printf '%s\n' "$output"
if [ -s "$errfile" ]; then
  echo "run.sh: stderr:"
  cat "$errfile"
fi
echo "run.sh: exit status $status after ${elapsed}s (expected $expected_exit within $((seconds + 10))s)"

# Ranks killed with SIGKILL (by the test or by a launcher ending the job)
# leave shared-memory regions behind: libfabric shm's "lci-<pid>-..." (our
# endpoint names, src/net/ofi/ofi.cpp) and the native backend's
# "lci-shm-<pid>-..." (lcrun removes both after a crash; hydra and mpirun
# do not); ring prints its pid in failure tests so that they can be
# removed once the pid is gone.
for pid in $(printf '%s\n' "$output" | sed -n 's/^ring: pid \([0-9][0-9]*\)$/\1/p'); do
  kill -0 "$pid" 2>/dev/null && continue
  for f in /dev/shm/lci-"$pid"-* /dev/shm/lci-shm-"$pid"-*; do
    [ -f "$f" ] && [ -O "$f" ] && rm -f "$f"
  done
done

ok=1
if [ -n "$no_stderr" ] && [ -s "$errfile" ]; then
  echo "run.sh: FAIL: the run wrote to stderr"
  ok=0
fi
if [ -n "$private_shm" ] && [ -s "$shmfile" ]; then
  echo "run.sh: FAIL: left in /dev/shm: $(tr '\n' ' ' < "$shmfile")"
  ok=0
fi
if [ "$expected_exit" = nonzero ]; then
  [ "$status" -ne 0 ] || { echo "run.sh: FAIL: expected a non-zero exit status"; ok=0; }
elif [ "$status" -ne "$expected_exit" ]; then
  echo "run.sh: FAIL: exit status $status, expected $expected_exit"
  ok=0
fi
[ "$status" -eq 124 ] && [ "$expected_exit" != 124 ] &&
  echo "run.sh: FAIL: the outer timeout killed the launcher (a hang?)"
[ "$elapsed" -le $((seconds + 10)) ] || { echo "run.sh: FAIL: took ${elapsed}s"; ok=0; }

old_ifs=$IFS
IFS=$nl
for regex in $expects; do
  if ! printf '%s\n' "$output" | grep -E -q -e "$regex"; then
    echo "run.sh: FAIL: no output line matches '$regex'"
    ok=0
  fi
done
for entry in $counts; do
  want=${entry%% *}
  regex=${entry#* }
  got=$(printf '%s\n' "$output" | grep -E -c -e "$regex")
  if [ "$got" -ne "$want" ]; then
    echo "run.sh: FAIL: $got output lines match '$regex', expected $want"
    ok=0
  fi
done
IFS=$old_ifs

[ "$ok" = 1 ] && exit 0
exit 1
