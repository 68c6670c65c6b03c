#!/bin/bash
# Robustness: while one smbclient session keeps working (a put and a get every half second over
# one connection), build/badinput sends truncated, oversized and garbage PDUs on other
# connections. Afterwards the server must still run, the long session must have seen no error,
# and a new session must work.
#
# build/badinput (tests/client/badinput_main.cpp) is called as
#   badinput --host 127.0.0.1 --port PORT --user alice --password pw --share data
# (override with BADINPUT_ARGS) and exits 0 when every bad input was answered with an error or a
# disconnect as the specification asks. Without build/badinput this test is skipped (exit 77).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

BADINPUT=${BADINPUT:-$DAXSMBD_BUILD/badinput}
if [ ! -x "$BADINPUT" ]; then
    echo "$TEST_NAME: SKIP: $BADINPUT is not built (tests/client/badinput_main.cpp)"
    exit 77
fi

interop_setup
trap '' PIPE  # a write to a dead smbclient must fail, not kill this script

WORK=$TESTDIR/client
mkdir -p "$WORK"
head -c 1M /dev/urandom >"$WORK/payload.bin"

# One long smbclient session fed through a FIFO.
mkfifo "$TESTDIR/cmds"
timeout -k 5 900 smbclient --configfile="$TESTDIR/client.conf" //127.0.0.1/data -p "$PORT" \
    -U "$SMB_USER%$SMB_PASS" <"$TESTDIR/cmds" >"$TESTDIR/session.log" 2>&1 &
CLIENT_PID=$!
exec 7>"$TESTDIR/cmds"
send() { { printf '%s\n' "$1" >&7; } 2>/dev/null || true; }

send "put $WORK/payload.bin first.bin"
deadline=$((SECONDS + 30))
while [ ! -s "$DATA_DIR/first.bin" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
check "the long session is up" cmp -s "$WORK/payload.bin" "$DATA_DIR/first.bin"

rc=0
# shellcheck disable=SC2086  # BADINPUT_ARGS is a word list on purpose
timeout -k 5 600 "$BADINPUT" ${BADINPUT_ARGS:---host 127.0.0.1 --port $PORT --user $SMB_USER --password $SMB_PASS --share data} \
    >"$TESTDIR/badinput.log" 2>&1 &
BAD_PID=$!
i=0
while kill -0 "$BAD_PID" 2>/dev/null; do
    i=$((i + 1))
    send "put $WORK/payload.bin loop-$i.bin"
    send "get loop-$i.bin $WORK/back-$i.bin"
    sleep 0.5
done
wait "$BAD_PID" || rc=$?
log "badinput exited with $rc after $i rounds of the long session"
sed 's/^/       | /' "$TESTDIR/badinput.log" | tail -n 40
check "badinput: every bad input was handled (exit 0, got $rc)" test "$rc" -eq 0

check "the server survived the bad input" server_alive

# Finish the long session with one more round trip, then end it.
send "put $WORK/payload.bin last.bin"
send "get last.bin $WORK/last.back"
send "exit"
exec 7>&-
crc=0
wait "$CLIENT_PID" || crc=$?
check "the long session ended normally (exit $crc)" test "$crc" -eq 0
check "the long session saw no error" file_lacks NT_STATUS_ "$TESTDIR/session.log"
check "its last round trip is intact" cmp -s "$WORK/payload.bin" "$WORK/last.back"
bad_rounds=0
for ((k = 1; k <= i; k++)); do
    cmp -s "$WORK/payload.bin" "$WORK/back-$k.bin" 2>/dev/null || bad_rounds=$((bad_rounds + 1))
done
check "all $i round trips during the bad input are intact ($bad_rounds bad)" test "$bad_rounds" -eq 0
if [ "$FAILS" -ne 0 ]; then sed 's/^/       | /' "$TESTDIR/session.log" | grep -v '^       | smb: ' | tail -n 20; fi

expect_ok "a new session works afterwards" smb data -c "get last.bin $WORK/new.back"
check "... and reads the right data" cmp -s "$WORK/payload.bin" "$WORK/new.back"
check "no sanitizer report in the server log" \
    file_lacks 'AddressSanitizer|runtime error:|LeakSanitizer' "$LOG"

finish
