#!/bin/sh
# Usage: tests/multi/measure_peer_failure.sh BUILD_DIR [RUNS]
# The kill test of docs/RELIABILITY.md ("Peer failure"): RUNS (default 10)
# runs of mp_peer_failure per provider (shm, tcp on loopback) and rank
# count (2, 3) under lcrun --keep-going; prints one line per run with the
# survivors' detection and g_runtime_fina times, then min/median/max.
# A measurement, not a test: not registered with ctest.
build=$(cd "${1:?usage: $0 BUILD_DIR [RUNS]}" && pwd)
runs=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp -d)
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo
for prov in shm tcp; do
  for n in 2 3; do
    extra=""
    [ $prov = tcp ] && extra=--ring-default
    for i in $(seq 1 "$runs"); do
      f=$log/${prov}_${n}_$i.log
      LCI_ATTR_BACKEND=ofi LCI_ATTR_OFI_PROVIDER_NAME=$prov sh "$here/peer_failure.sh" \
        "$build/tools/lcrun/lcrun" $n "$build/tests/multi/mp_peer_failure" \
        $extra > "$f" 2>&1
      echo "$prov n$n run $i status $? $(grep -o 'detect_ms=[0-9.]*' "$f" | tr '\n' ' ')$(grep -o 'fina_ms=[0-9.]*' "$f" | tr '\n' ' ')"
    done
  done
done | tee "$log/summary"
python3 - "$log/summary" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) n(\d) run \d+ status (\d+)", line)
    if not m:
        continue
    r = rows.setdefault((m.group(1), m.group(2)), {"runs": 0, "ok": 0, "d": [], "f": []})
    r["runs"] += 1
    r["ok"] += m.group(3) == "0"
    r["d"] += [float(x) for x in re.findall(r"detect_ms=([0-9.]+)", line)]
    r["f"] += [float(x) for x in re.findall(r"fina_ms=([0-9.]+)", line)]
for (prov, n), r in sorted(rows.items()):
    d, f = sorted(r["d"]) or [0], sorted(r["f"]) or [0]
    print("%s n=%s: %d/%d passed; detection ms min %.0f median %.0f max %.0f; "
          "fina ms min %.0f median %.0f max %.0f" % (prov, n, r["ok"], r["runs"],
          d[0], statistics.median(d), d[-1], f[0], statistics.median(f), f[-1]))
PY
rm -rf "$log"
