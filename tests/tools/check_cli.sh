#!/bin/sh
# Command lines of lcrun and a benchmark program (ctest: tools.cli): --help
# and --version exit 0, an unknown option, a missing value and a bad value
# exit 2 with a message naming the option, and "--opt=value" works.
fail=0
no() { echo "FAIL: $*"; fail=1; }
expect() {  # STATUS REGEX COMMAND...
  want=$1 regex=$2
  shift 2
  out=$("$@" 2>&1)
  got=$?
  [ "$got" -eq "$want" ] || no "$*: exit status $got, expected $want"
  printf '%s\n' "$out" | grep -Eq -e "$regex" || no "$*: no line matches '$regex': $out"
}
lcrun=$1
bench=$2
expect 0 '^Usage: lcrun' "$lcrun" --help
expect 0 '^lcrun \(LCI\) [0-9]+\.' "$lcrun" --version
expect 2 "unknown option '--bogus'" "$lcrun" --bogus true
expect 2 '^lcrun: -n needs a value' "$lcrun" -n
expect 2 "invalid number of ranks 'x'" "$lcrun" -n x true
expect 2 "invalid --timeout 'soon'" "$lcrun" --timeout=soon true
expect 0 '^2 2 -n$' "$lcrun" -np 2 --env=A=2 -- sh -c 'echo $A $PMI_SIZE -n' -- -n
expect 0 '^usage: ' "$bench" --help
expect 0 '\(LCI benchmarks\) [0-9]+\.' "$bench" --version
expect 2 "unknown option '--bogus'" "$bench" --bogus
expect 2 'needs a value' "$bench" --sizes
expect 2 "bad value 'abc' for --sizes" "$bench" --sizes=abc
expect 2 "unexpected argument 'stray'" "$bench" stray
[ "$fail" = 0 ] && echo "command-line checks passed"
exit "$fail"
