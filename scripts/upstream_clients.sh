#!/usr/bin/env bash
# Builds upstream LCI 2's client files (its examples, tests and benchmarks
# that need no GPU and none of its internals) against an installed LCI
# package, without edits, and runs them as upstream's CMake runs them.
# docs/ARCHITECTURE.md ("Compatibility with upstream LCI 2") records the
# last result.
#
# usage: scripts/upstream_clients.sh UPSTREAM_SRC PREFIX WORKDIR
#   UPSTREAM_SRC  a checkout of upstream LCI 2 (e.g. commit ca88ce2)
#   PREFIX        where this library is installed (cmake --install)
#   WORKDIR       a scratch directory outside both trees
# Needs GoogleTest, cxxopts and OpenMP (Debian: libgtest-dev,
# libcxxopts-dev, libomp-dev: scripts/deps.sh --upstream). Each run has a timeout of T seconds
# (default 300). Prints one PASS/FAIL line per run and a total; exits 1
# if anything failed to build or run.
set -u
U=$(cd "${1:?UPSTREAM_SRC}" && pwd)
P=$(cd "${2:?PREFIX}" && pwd)
W=${3:?WORKDIR}
T=${T:-300}
mkdir -p "$W/drivers" "$W/stub" "$W/logs"
W=$(cd "$W" && pwd)
# the two loopback headers that include upstream's internal header use
# nothing from it
echo '// empty: the harness stands in for upstream internal header; the files built include it but use nothing from it' \
  > "$W/stub/lci_internal.hpp"
LOOPBACK="am basic counter cq get graph idle matching_policy put putImm
rdv_protocol reg_cache sendrecv sync"
for t in $LOOPBACK; do
  cat > "$W/drivers/loopback_$t.cpp" <<EOF
#include <gtest/gtest.h>
#include <thread>
#include <vector>
#include <random>
#include <iterator>
#include "lci.hpp"
#include "lci_internal.hpp"
#include "util.hpp"
#include "test_$t.hpp"
int main(int argc, char** argv)
{
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
EOF
done
cat > "$W/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(upstream_clients CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(LCI 2 REQUIRED)
find_package(OpenMP REQUIRED)
find_package(GTest REQUIRED)
find_package(cxxopts REQUIRED)
find_package(Threads REQUIRED)
set(U $U)
function(client name src)
  add_executable(\${name} \${src})
  target_link_libraries(\${name} PRIVATE LCI::lci OpenMP::OpenMP_CXX
    cxxopts::cxxopts GTest::gtest Threads::Threads)
  target_include_directories(\${name} PRIVATE \${U}/tests/unit/include
    \${U}/tests)
endfunction()
foreach(f hello_world hello_world_am pingpong_am_mt nonblocking_barrier
          distributed_array)
  client(ex_\${f} \${U}/examples/\${f}.cpp)
endforeach()
foreach(f bench_collective bench_many2many_am collective)
  client(bm_\${f} \${U}/benchmarks/\${f}.cpp)
endforeach()
foreach(f bench_am_lat bench_put_bw bench_put_lat)
  client(bm_\${f} \${U}/benchmarks/pt2pt/\${f}.cpp)
endforeach()
foreach(f bench_atomic bench_cq bench_malloc bench_matching_engine
          bench_mem_reg bench_memcpy bench_packet_pool)
  client(bm_\${f} \${U}/benchmarks/resources/\${f}.cpp)
endforeach()
client(coll_all \${U}/tests/unit/collective/all.cpp)
foreach(t $(echo $LOOPBACK))
  client(lb_\${t} drivers/loopback_\${t}.cpp)
  target_include_directories(lb_\${t} PRIVATE stub \${U}/tests/unit/loopback)
endforeach()
foreach(f test_cxx11 test_lct_pmi_tcp test_preinitialized_lct_pmi)
  client(cx_\${f} \${U}/tests/unit/cxx11/\${f}.cpp)
endforeach()
# upstream builds this one as C++11
set_target_properties(cx_test_cxx11 PROPERTIES CXX_STANDARD 11
  CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
client(rs_process_failure \${U}/tests/resilience/process_failure.cpp)
EOF
B=$W/build
cmake -S "$W" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$P" \
  > "$W/logs/configure.log" 2>&1 || { echo "configure failed: $W/logs"; exit 1; }
cmake --build "$B" -j2 -- -k 0 > "$W/logs/build.log" 2>&1
L=$P/bin/lcrun
OUT=$W/results.txt
: > "$OUT"
i=0
run() {  # name exe command...
  local name=$1 exe=$2
  shift 2
  i=$((i + 1))
  if [[ ! -x $B/$exe ]]; then
    echo "NOTBUILT $name" | tee -a "$OUT"
    return
  fi
  local t0=$SECONDS
  timeout -k 10 "$T" "$@" > "$W/logs/$i-$name.log" 2>&1
  local rc=$?
  echo "$([[ $rc == 0 ]] && echo PASS || echo FAIL) rc=$rc" \
    "$((SECONDS - t0))s $name" | tee -a "$OUT"
}
for f in hello_world hello_world_am pingpong_am_mt nonblocking_barrier \
         distributed_array; do
  run ex_$f ex_$f "$L" -n 2 "$B/ex_$f"
done
# collective.cpp is not in upstream's CMake: run as bench_collective is
for f in bench_collective bench_many2many_am collective; do
  run bm_$f bm_$f "$L" -n 2 "$B/bm_$f"
done
e=bm_bench_put_bw
run put_bw1 $e "$L" -n 4 "$B/$e" -t 1 --nelems 1024 --niters 1
run put_bw2 $e "$L" -n 2 "$B/$e" -t 2 --nelems 1024 --niters 1
run put_bw3 $e "$L" -n 2 "$B/$e" -t 1 --nelems 64 --msg-size 1024 \
  --niters 1 --remote-completion
run put_bw4 $e "$L" -n 2 "$B/$e" -t 1 --nelems 64 --msg-size 32 \
  --niters 1 --remote-completion
run put_bw5 $e "$L" -n 2 "$B/$e" -t 1 --nelems 64 --msg-size 32 \
  --niters 1 --remote-completion --force-posted-writedata
e=bm_bench_put_lat
run put_lat1 $e "$L" -n 2 "$B/$e" --msg-size 32 --niters 2 --warmup-iters 1
run put_lat2 $e "$L" -n 2 "$B/$e" --msg-size 32 --niters 2 \
  --warmup-iters 1 --force-posted-writedata
e=bm_bench_am_lat
run am_lat1 $e "$L" -n 2 "$B/$e" -t 2 --msg-size 8 --niters 1000
run am_lat2 $e "$L" -n 4 "$B/$e" -t 1 --msg-size 16384 --niters 100
for f in bench_atomic bench_cq bench_malloc bench_matching_engine \
         bench_mem_reg bench_memcpy bench_packet_pool; do
  run bm_$f bm_$f "$B/bm_$f"
done
for n in 2 3 4 5 6 7 8; do run coll_all_n$n coll_all "$L" -n $n "$B/coll_all"; done
for t in $LOOPBACK; do run lb_$t lb_$t "$B/lb_$t"; done
run cx_test_cxx11 cx_test_cxx11 "$B/cx_test_cxx11"
run cx_test_preinitialized_lct_pmi cx_test_preinitialized_lct_pmi \
  "$B/cx_test_preinitialized_lct_pmi"
e=cx_test_lct_pmi_tcp
S=$U/tests/unit/cxx11/run_tcp_pmi_test.sh
run tcp_pmi_LCT $e bash "$S" "$B/$e" 2 pmi LCT
run tcp_pmi_LCI $e bash "$S" "$B/$e" 2 pmi LCI
run tcp_pmi_MASTER $e bash "$S" "$B/$e" 2 pmi MASTER
run tcp_fallback_local $e bash "$S" "$B/$e" 1 fallback-local NONE
run tcp_mixed_expect_fail $e bash "$S" "$B/$e" 2 mixed-expect-fail MIXED
run tcp_reject_torchrun $e bash "$S" "$B/$e" 1 reject-torchrun LCT
run rs_process_failure rs_process_failure bash \
  "$U/tests/resilience/run_process_failure_test.sh" "$B/rs_process_failure"
pass=$(grep -c '^PASS' "$OUT")
total=$(wc -l < "$OUT")
echo "total $total pass $pass (logs: $W/logs)"
[[ $pass == "$total" ]]
