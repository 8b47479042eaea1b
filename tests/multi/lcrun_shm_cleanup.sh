#!/bin/sh
# lcrun removes the native shm segments of ranks that end by a signal: each
# rank plants "/dev/shm/lci-shm-<its pid>-0-0" (as a rank killed before its
# peers mapped its segment leaves), then
#   kill  (default) kills itself with SIGKILL;
#   term  ignores SIGTERM and sleeps past lcrun's --timeout, so lcrun's
#         SIGTERM does nothing and its SIGKILL after the grace period ends
#         it.
# After lcrun returns, no planted file may remain.
# Usage: lcrun_shm_cleanup.sh LCRUN [kill|term]
lcrun=$1
mode=${2:-kill}
dir=$(mktemp -d) || exit 1
if [ "$mode" = term ]; then
  cat > "$dir/rank.sh" <<'EOS'
#!/bin/sh
trap '' TERM
: > /dev/shm/lci-shm-$$-0-0 || exit 3
echo $$ >> "$(dirname "$0")/pids"
sleep 30
EOS
  timeout=1
else
  cat > "$dir/rank.sh" <<'EOS'
#!/bin/sh
: > /dev/shm/lci-shm-$$-0-0 || exit 3
echo $$ >> "$(dirname "$0")/pids"
sleep 2  # both ranks plant before either dies
kill -9 $$
EOS
  timeout=20
fi
chmod +x "$dir/rank.sh"
"$lcrun" -n 2 --timeout "$timeout" "$dir/rank.sh"
rc=$?
status=0
if [ "$rc" -eq 0 ]; then
  echo "lcrun exited 0 although its ranks were killed"
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
  echo "lcrun removed the segments of its 2 killed ranks ($mode)"
exit $status
