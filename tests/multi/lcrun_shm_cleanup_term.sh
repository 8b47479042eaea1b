#!/bin/sh
# lcrun removes the native shm segments of ranks it has to kill with
# SIGKILL: each rank plants "/dev/shm/lci-shm-<its pid>-0-0", ignores
# SIGTERM and sleeps past lcrun's --timeout; lcrun's SIGTERM does nothing,
# its SIGKILL after the grace period ends them. After lcrun returns, no
# planted file may remain.
# Usage: lcrun_shm_cleanup_term.sh LCRUN
lcrun=$1
dir=$(mktemp -d) || exit 1
cat > "$dir/rank.sh" <<'EOS'
#!/bin/sh
trap '' TERM
: > /dev/shm/lci-shm-$$-0-0 || exit 3
echo $$ >> "$(dirname "$0")/pids"
sleep 30
EOS
chmod +x "$dir/rank.sh"
"$lcrun" -n 2 --timeout 1 "$dir/rank.sh"
rc=$?
status=0
if [ "$rc" -eq 0 ]; then
  echo "lcrun exited 0 although it killed its ranks"
  status=1
fi
n=0
for pid in $(cat "$dir/pids" 2>/dev/null); do
  n=$((n + 1))
  if [ -e "/dev/shm/lci-shm-$pid-0-0" ]; then
    echo "left behind: /dev/shm/lci-shm-$pid-0-0"
    rm -f "/dev/shm/lci-shm-$pid-0-0"
    status=1
  fi
done
if [ "$n" -ne 2 ]; then
  echo "expected 2 ranks to plant a segment, $n did"
  status=1
fi
rm -rf "$dir"
[ "$status" -eq 0 ] &&
  echo "lcrun removed the segments of its 2 ranks killed after SIGTERM"
exit $status
