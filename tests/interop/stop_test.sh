#!/bin/bash
# A graceful stop (SIGTERM) during a 1 GiB write from smbclient: the server stops taking
# requests, lets those in processing finish and answers them, syncs the share and exits 0;
# smbclient ends with an error (an NT status, or SIGPIPE on the closed connection) or completes, and what reached the file is exactly the
# start of what smbclient sent: nothing acknowledged is lost, nothing is torn.
#
#   tests/interop/stop_test.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

interop_setup
SRC=$TESTDIR/source.bin
DEST=$DATA_DIR/big.bin
head -c 1G /dev/urandom >"$SRC"

smb data -c "put $SRC big.bin" >"$TESTDIR/put.out" 2>&1 &
PUT_PID=$!
for _ in $(seq 1 600); do
    [ "$(stat -c %s "$DEST" 2>/dev/null || echo 0)" -gt $((64 << 20)) ] && break
    sleep 0.05
done
AT_STOP=$(stat -c %s "$DEST" 2>/dev/null || echo 0)
check "the write is under way when the stop begins ($AT_STOP bytes)" test "$AT_STOP" -gt 0
kill -TERM "$SERVER_PID"
RC=0
wait "$SERVER_PID" || RC=$?
SERVER_PID= # stopped on purpose: the cleanup must not count it as died
check "the daemon exits 0" test "$RC" = 0
PUT_RC=0
wait "$PUT_PID" || PUT_RC=$?
sed 's/^/  | /' "$TESTDIR/put.out" >&2
if [ "$PUT_RC" = 0 ]; then
    check "smbclient completed: the whole file is there" cmp -s "$SRC" "$DEST"
elif [ "$PUT_RC" -gt 128 ]; then
    # smbclient does not ignore SIGPIPE: its next send on the closed connection ends it.
    check "smbclient was ended by SIGPIPE from the closed connection" test "$PUT_RC" = 141
else
    check "smbclient ended with an NT status error" grep -q 'NT_STATUS_' "$TESTDIR/put.out"
fi
check "the stop let the requests in processing finish" \
    grep -Eq 'stop: the requests in processing on [0-9]+ connections finished in [0-9]+ ms; shares synced' "$LOG"
check "the connection was closed by the stop" grep -q 'closed (the server is stopping)' "$LOG"
SIZE=$(stat -c %s "$DEST")
log "smbclient exit $PUT_RC; $SIZE of $((1 << 30)) bytes on disk after the stop ($AT_STOP when it began)"
check "the file holds at least what was there when the stop began" test "$SIZE" -ge "$AT_STOP"
check "what reached the file is the start of the source, byte for byte" cmp -n "$SIZE" "$SRC" "$DEST"
finish
