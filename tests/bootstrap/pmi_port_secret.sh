#!/usr/bin/env bash
# Usage: pmi_port_secret.sh LCRUN
# lcrun --pmi-port admits only the job's ranks. Inside a
# 1-rank job, connects to lcrun's PMI port as an outsider would: without the
# job secret, with a wrong one, and with a request before "cmd=initack";
# each must be refused and closed. Then the rank connects with the secret it
# was given (LCI_PMI_SECRET) and is admitted. The secret (32 hex digits)
# must never appear in lcrun's output, even with -v.
set -u
lcrun=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# The rank's side. try REQUEST [closed]: prints the first reply line; with
# "closed", also checks that the server then closed the connection.
cat > "$scratch/rank.sh" <<'RANK'
h=${PMI_PORT%:*}
p=${PMI_PORT##*:}
try() {
  exec 3<>"/dev/tcp/$h/$p"
  echo "$1" >&3
  read -r line <&3
  echo "$line"
  if [ -n "${2:-}" ] && read -r more <&3; then echo "not closed: $more"; fi
  exec 3<&-
}
echo "A $(try 'cmd=initack pmiid=0' closed)"
echo "B $(try 'cmd=initack pmiid=0 secret=00000000000000000000000000000000' closed)"
echo "C $(try 'cmd=get_maxes' closed)"
echo "D $(try "cmd=initack pmiid=0 secret=$LCI_PMI_SECRET")"
[ "${#LCI_PMI_SECRET}" = 32 ] && echo secret-length-ok
echo "$LCI_PMI_SECRET" > "$1"
RANK

out=$("$lcrun" -n 1 -v --pmi-port --timeout 20 -- bash "$scratch/rank.sh" \
      "$scratch/secret" 2>&1)
status=$?
echo "$out"
echo "pmi_port_secret: lcrun exited with $status"
fail() { echo "pmi_port_secret: FAILED: $*"; exit 1; }
[ "$status" = 0 ] || fail "lcrun status $status"
secret=$(cat "$scratch/secret" 2>/dev/null)
[ -n "$secret" ] || fail "the rank saw no secret"
echo "$out" | grep -qx 'A cmd=initack rc=-1 msg=bad_secret' || fail "A admitted"
echo "$out" | grep -qx 'B cmd=initack rc=-1 msg=bad_secret' || fail "B admitted"
echo "$out" | grep -qx 'C cmd=get_maxes_result rc=-1 msg=send_initack_first' ||
  fail "C served"
echo "$out" | grep -qx 'D cmd=initack rc=0' || fail "the rank was refused"
echo "$out" | grep -q 'not closed' && fail "a refused connection stayed open"
echo "$out" | grep -qx secret-length-ok || fail "the secret is not 32 digits"
echo "$out" | grep -qF "$secret" && fail "the secret was printed"
echo "$out" | grep -c 'lcrun: refusing PMI connection' | grep -qx 3 ||
  fail "lcrun did not report the 3 refusals"
echo "pmi_port_secret: passed"
exit 0
