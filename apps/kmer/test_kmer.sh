#!/bin/sh
# The ctest driver of apps/kmer (tests.cmake).
#
#   test_kmer.sh data DIR
#       the test inputs in DIR: the velvet reads (Debian velvet-tests)
#       decompressed, and malformed files cut from them
#   test_kmer.sh ref DIR K NAME FILE...
#       the serial count (serial_count.py) of FILE... into DIR/NAME.histo
#   test_kmer.sh run [checks] -- LAUNCHER... PROGRAM ARGS...
#       runs the command under an outer timeout and checks it:
#       --need FILE            skip (77) unless FILE exists
#       --histo OUT REF FROM   OUT (written by the run) equals the rows of
#                              REF with counts >= FROM
#       --fail REGEX           the run exits non-zero and its output
#                              matches REGEX (default: it exits 0)
#       --lines REGEX N        exactly N output lines match REGEX
#       --check-output OUT K MIN FILE
#                              OUT (--output of the run) holds the k-mers of
#                              FILE with count >= MIN and their counts
#       --timeout S            outer timeout (default 150)
# Exits 0 when every check passes, 77 when a launcher, program or input is
# missing, 1 otherwise.
here=$(cd "$(dirname "$0")" && pwd)
velvet=/usr/share/doc/velvet/tests

mode=$1
shift

case $mode in
  data)
    dir=$1
    mkdir -p "$dir" || exit 1
    if [ ! -f "$velvet/reads.fq.gz" ]; then
      echo "velvet-tests is not installed (scripts/deps.sh): no data"
      exit 0
    fi
    set -e
    gzip -dc "$velvet/reads.fq.gz" > "$dir/reads.fq"
    # a record cut after its sequence line (line 4002: the header of
    # record 1001 is line 4001)
    head -n 4002 "$dir/reads.fq" > "$dir/truncated.fq"
    # a digit in the sequence of record 501 (line 2002)
    awk 'NR == 2002 { $0 = substr($0, 1, 9) "7" substr($0, 11) } { print }' \
      "$dir/reads.fq" > "$dir/badchar.fq"
    # qualities of offset 33 ('#' is below 64) in record 11 (line 44)
    awk 'NR == 44 { $0 = "#" substr($0, 2) } { print }' \
      "$dir/reads.fq" > "$dir/badqual.fq"
    # a gzip file cut in the middle
    head -c 300000 "$velvet/reads.fq.gz" > "$dir/cut.fq.gz"
    : > "$dir/empty.fq"
    echo "data in $dir"
    exit 0
    ;;
  ref)
    dir=$1 k=$2 name=$3
    shift 3
    for f in "$@"; do
      [ -f "$f" ] || { echo "no $f: no reference"; exit 0; }
    done
    exec python3 "$here/serial_count.py" -k "$k" --histo "$dir/$name.histo" "$@"
    ;;
  run) ;;
  *)
    echo "test_kmer.sh: unknown mode '$mode'" >&2
    exit 2
    ;;
esac

histo_out="" histo_ref="" histo_from=1
fail="" lines="" timeout_s=150
check_out="" check_k="" check_min="" check_file=""
nl='
'
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --need)
      [ -e "$2" ] || { echo "SKIP: $2 is missing"; exit 77; }
      shift 2
      ;;
    --histo) histo_out=$2 histo_ref=$3 histo_from=$4; shift 4 ;;
    --fail) fail=$2; shift 2 ;;
    --lines) lines="$lines$3 $2$nl"; shift 3 ;;
    --check-output)
      check_out=$2 check_k=$3 check_min=$4 check_file=$5
      shift 5
      ;;
    --timeout) timeout_s=$2; shift 2 ;;
    *) echo "test_kmer.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[ "$1" = "--" ] && shift
[ $# -ge 1 ] || { echo "test_kmer.sh: no command" >&2; exit 2; }
command -v "$1" > /dev/null 2>&1 || { echo "SKIP: $1 is not installed"; exit 77; }

[ -n "$histo_out" ] && rm -f "$histo_out"
[ -n "$check_out" ] && rm -f "$check_out"
echo "test_kmer.sh: + $*"
output=$(timeout -k 5 "$timeout_s" "$@" 2>&1)
status=$?
printf '%s\n' "$output"
echo "test_kmer.sh: exit status $status"

ok=1
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "test_kmer.sh: FAIL: the run did not end within ${timeout_s}s (a hang?)"
  ok=0
elif [ -n "$fail" ]; then
  [ "$status" -ne 0 ] || { echo "test_kmer.sh: FAIL: expected a non-zero exit status"; ok=0; }
  printf '%s\n' "$output" | grep -Eq -- "$fail" ||
    { echo "test_kmer.sh: FAIL: no output line matches '$fail'"; ok=0; }
elif [ "$status" -ne 0 ]; then
  echo "test_kmer.sh: FAIL: exit status $status"
  ok=0
fi

if [ -n "$lines" ]; then
  printf '%s' "$lines" | while read -r want regex; do
    got=$(printf '%s\n' "$output" | grep -Ec -- "$regex")
    if [ "$got" -ne "$want" ]; then
      echo "test_kmer.sh: FAIL: $got lines match '$regex', expected $want"
      exit 1
    fi
  done || ok=0
fi

if [ -n "$histo_out" ] && [ "$ok" = 1 ]; then
  if [ ! -f "$histo_ref" ]; then
    echo "test_kmer.sh: FAIL: no reference $histo_ref"
    ok=0
  elif [ ! -f "$histo_out" ]; then
    echo "test_kmer.sh: FAIL: the run wrote no $histo_out"
    ok=0
  else
    want=$(awk -v from="$histo_from" '$1 >= from' "$histo_ref")
    got=$(cat "$histo_out")
    if [ "$want" = "$got" ] && [ -n "$got" ]; then
      echo "test_kmer.sh: histogram equal to the serial count" \
        "($(printf '%s\n' "$got" | wc -l) rows from count $histo_from)"
    else
      echo "test_kmer.sh: FAIL: histogram differs from the serial count" \
        "(< serial, > run):"
      printf '%s\n' "$want" > "$histo_out.want"
      diff "$histo_out.want" "$histo_out" | head -20
      rm -f "$histo_out.want"
      ok=0
    fi
  fi
fi

if [ -n "$check_out" ] && [ "$ok" = 1 ]; then
  python3 "$here/serial_count.py" -k "$check_k" --check-output "$check_out" \
    --min-count "$check_min" "$check_file" || ok=0
fi

[ -n "$histo_out" ] && rm -f "$histo_out"
[ -n "$check_out" ] && rm -f "$check_out"
[ "$ok" = 1 ] && exit 0
exit 1
