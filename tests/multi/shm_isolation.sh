#!/bin/sh
# Jobs and users apart on one node, native shm backend (run as root: it
# needs a second uid, taken with setpriv as user nobody).
#
# A job of 2 ranks in which rank 1 runs as user nobody, under umask 0277
# (which would leave 0400 of the 0600 that shm_open asks for): rank 1 must
# be refused at start-up with a clear error ("do all ranks run as the same
# user?"); its wrapper then stays alive, so rank 0 (which, as root, could
# map rank 1's segment) waits with its segments still named (rank 1 never
# mapped them). While it waits: rank 0's segments (its device's and its
# registration table) are mode 0600 and owned by root, and nobody can open
# them for reading or writing. Then rank 0 is killed with SIGKILL (a crash
# while its segments have names):
#   users   under lcrun: lcrun removes what the killed rank left;
#   crash   under mpiexec.hydra, which does not: what is left is counted
#           (the figure for docs/RELIABILITY.md), the next job on the node
#           (lcrun, 2 ranks) must pass, and its start must have removed
#           the leftovers (the pid is gone, same user and pid namespace).
#   twojobs two lcrun jobs and two mpiexec.hydra jobs at once, each of
#           2 ranks: all four pass (no job maps another's segments).
#
# Usage: shm_isolation.sh LCRUN PROGRAM [CASE...]   (PROGRAM: mp_sendrecv)
# Every process started here is ended by its pid; every file left by a
# process of this test is removed (and reported) at the end.
lcrun=$1
prog=$2
shift 2
cases=${*:-users crash twojobs}
export LCI_ATTR_BACKEND=shm
nobody_uid=$(id -u nobody 2>/dev/null) || nobody_uid=65534
hydra=${LCI_TEST_MPIEXEC_HYDRA:-/usr/bin/mpiexec.hydra}
dir=$(mktemp -d) || exit 1
status=0
bg_pids=""

fail() {
  echo "FAIL: $*"
  status=1
}

cleanup() {
  for p in $bg_pids; do
    kill -9 "$p" 2>/dev/null
  done
  for f in "$dir"/pid*; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    for s in /dev/shm/lci-shm-"$p"-*; do
      [ -e "$s" ] || continue
      echo "removing $s (left by pid $p of this test)"
      rm -f "$s"
    done
  done
  rm -rf "$dir"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root (a second uid through setpriv)"
  exit 77
fi
as_nobody() {
  setpriv --reuid="$nobody_uid" --regid="$nobody_uid" --clear-groups -- "$@"
}

# A rank wrapper: records its pid as pid<tag>.<rank> and execs the
# program; with $2 = nobody, rank 1 runs the program as nobody, records
# that one's pid, and then stays (sleeps) in place of the program.
cat > "$dir/rank.sh" <<'EOS'
#!/bin/sh
tag=$1 who=$2
shift 2
d=$(dirname "$0")
rank=${PMI_RANK:-${PMI_ID:-x}}
echo $$ > "$d/pid$tag.$rank"
if [ "$rank" = 1 ] && [ "$who" = nobody ]; then
  # at the lowest priority, so that rank 0 tends to open this rank's
  # segment before this rank is refused and removes it (stuck_try)
  nice -n 19 setpriv --reuid="$NOBODY_UID" --regid="$NOBODY_UID" \
    --clear-groups -- "$@" &
  echo $! > "$d/pid$tag.1n"
  wait $!
  echo $? > "$d/done$tag"
  exec sleep 60
fi
exec "$@"
EOS
chmod 755 "$dir/rank.sh" "$dir"
export NOBODY_UID=$nobody_uid

# waits up to 20 s for file $1 to be non-empty
wait_file() {
  i=0
  while [ ! -s "$1" ] && [ $i -lt 200 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  [ -s "$1" ]
}

# One try of the job of the header with launcher $1 (lcrun or hydra), tag
# $2: sets `left` to the number of rank 0's files left in /dev/shm once the
# launcher has returned; returns 2 when this try cannot tell (rank 1 gave
# up and removed its segment before rank 0 opened it: rank 0 then fails
# too, and rank 1 may wait for rank 0's segment until its own time-out; a
# race of the test, not of the library).
stuck_try() {
  l=$1 t=$2
  left=0
  if [ "$l" = lcrun ]; then
    (umask 0277 && exec "$lcrun" -n 2 --timeout 60 "$dir/rank.sh" "$t" nobody \
      "$prog") > "$dir/out.$t" 2>&1 &
  else
    (umask 0277 && trap '' PIPE && MPIEXEC_TIMEOUT=60 exec "$hydra" -iface lo \
      -n 2 "$dir/rank.sh" "$t" nobody "$prog") > "$dir/out.$t" 2>&1 &
  fi
  job=$!
  bg_pids="$bg_pids $job"
  if ! wait_file "$dir/done$t" || ! wait_file "$dir/pid$t.0"; then
    if grep -q "cannot open rank 1's shared-memory segment" "$dir/out.$t"; then
      # the same race the other way round: rank 0 gave up first, and rank
      # 1 waits for rank 0's segment, which will not come
      for f in "$dir/pid$t".*; do
        [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
      done
      kill -9 "$job"
      wait "$job"
      return 2
    fi
    fail "$l: rank 1 did not finish, or rank 0 did not start"
    cat "$dir/out.$t"
    kill -9 "$job"
    wait "$job"
    return 1
  fi
  p=$(cat "$dir/pid$t.0")
  sleep 1
  if grep -q "cannot open rank 1's shared-memory segment" "$dir/out.$t"; then
    # rank 0 failed: end the job (rank 1's wrapper sleeps)
    kill "$(cat "$dir/pid$t.1")" 2>/dev/null
    wait "$job"
    return 2
  fi
  [ "$(cat "$dir/done$t")" != 0 ] || fail "$l: rank 1 (as nobody) succeeded"
  n=0
  for s in /dev/shm/lci-shm-"$p"-*; do
    [ -e "$s" ] || continue
    n=$((n + 1))
    mode=$(stat -c %a "$s")
    owner=$(stat -c %u "$s")
    [ "$mode" = 600 ] || fail "$s has mode $mode under umask 0277, expected 600"
    [ "$owner" = 0 ] || fail "$s is owned by uid $owner, expected 0"
    if as_nobody sh -c 'exec 3< "$1"' sh "$s" 2>/dev/null; then
      fail "user nobody could open $s for reading"
    fi
    if as_nobody sh -c 'exec 3>> "$1"' sh "$s" 2>/dev/null; then
      fail "user nobody could open $s for writing"
    fi
  done
  [ "$n" -ge 2 ] ||
    fail "$l: expected rank 0's device segment and registration table, found $n"
  echo "$l: rank 0 (pid $p) waits with $n named segments: mode 600 under umask 0277, nobody refused"
  kill -9 "$p"
  wait "$job"
  rc=$?
  cat "$dir/out.$t"
  [ "$rc" -ne 0 ] || fail "$l exited 0 after its rank 0 was killed"
  grep -q "do all ranks run as the same user" "$dir/out.$t" ||
    fail "$l: no clear refusal of the rank of another uid"
  left=$(ls /dev/shm/lci-shm-"$p"-* 2>/dev/null | wc -l)
  return 0
}

# stuck_try until it can tell (12 tries, tags $2 0, $2 1, ...; `used`: the
# last one)
stuck_job() {
  k=0
  while [ $k -lt 12 ]; do
    used=$2$k
    stuck_try "$1" "$used"
    r=$?
    [ $r -ne 2 ] && return $r
    echo "$1: rank 1 removed its segment before rank 0 opened it: again"
    k=$((k + 1))
  done
  fail "$1: 12 tries, rank 0 never got to wait"
  return 1
}

for c in $cases; do
  case $c in
    users)
      stuck_job lcrun u
      echo "users: lcrun: rank 1 as nobody refused; rank 0 killed: $left of its files left"
      [ "$left" -eq 0 ] || fail "lcrun left $left files of its killed rank"
      ;;
    twojobs)
      for j in 1 2; do
        "$lcrun" -n 2 --timeout 60 "$dir/rank.sh" l$j me "$prog" \
          > "$dir/out.l$j" 2>&1 &
        eval "lc$j=\$!"
        bg_pids="$bg_pids $!"
      done
      hy=""
      if [ -x "$hydra" ]; then
        for j in 1 2; do
          (trap '' PIPE && MPIEXEC_TIMEOUT=60 exec "$hydra" -iface lo -n 2 \
            "$dir/rank.sh" h$j me "$prog") > "$dir/out.h$j" 2>&1 &
          eval "hy$j=\$!"
          bg_pids="$bg_pids $!"
        done
        hy="1 2"
      else
        echo "twojobs: $hydra not installed, lcrun jobs only"
      fi
      for j in 1 2; do
        eval "wait \$lc$j" || { cat "$dir/out.l$j"; fail "lcrun job $j failed"; }
      done
      for j in $hy; do
        eval "wait \$hy$j" || { cat "$dir/out.h$j"; fail "hydra job $j failed"; }
      done
      echo "twojobs: 2 lcrun jobs and $([ -n "$hy" ] && echo 2 || echo no) hydra jobs at once passed"
      ;;
    crash)
      if [ ! -x "$hydra" ]; then
        echo "crash: $hydra not installed: skipped"
        continue
      fi
      stuck_job hydra c
      p=$(cat "$dir/pid$used.0" 2>/dev/null)
      echo "crash: hydra: rank 0 (pid $p) killed with SIGKILL: $left of its files left in /dev/shm"
      # the next job on the node, with the leftovers in place
      "$lcrun" -n 2 --timeout 60 "$dir/rank.sh" n me "$prog" \
        > "$dir/out.n" 2>&1 || { cat "$dir/out.n"; fail "the next job failed"; }
      now=$(ls /dev/shm/lci-shm-"$p"-* 2>/dev/null | wc -l)
      echo "crash: after the next job: $now of them left"
      [ "$now" -eq 0 ] || fail "the next job did not remove the $now leftovers of pid $p"
      ;;
    *)
      echo "unknown case $c"
      exit 2
      ;;
  esac
done
# no named segment of any finished rank of this test remains
for f in "$dir"/pid*; do
  [ -f "$f" ] || continue
  p=$(cat "$f")
  kill -0 "$p" 2>/dev/null && continue
  if ls /dev/shm/lci-shm-"$p"-* > /dev/null 2>&1; then
    fail "left in /dev/shm: $(ls /dev/shm/lci-shm-"$p"-*)"
  fi
done
[ "$status" -eq 0 ] && echo "shm_isolation: ok ($cases)"
exit $status
