#!/bin/bash
# daxsmbd-admin status and close-session against the running daemon (README "Status and
# administration"): smbclient holds a file open, status lists its connection, user, tree and
# file; the control socket is root only (mode and peer credentials); close-session ends that
# client's session while a new client connects as usual.
#
#   tests/interop/control_test.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

interop_setup
SOCK=$TESTDIR/run/control
admin() { "$DAXSMBD_ADMIN" -s "$CONF" "$@"; }

echo "== the socket"
check "the control socket exists" test -S "$SOCK"
check "it is mode 0600" test "$(stat -c %a "$SOCK")" = 600
check "its directory is mode 0700" test "$(stat -c %a "$TESTDIR/run")" = 700
check "the start is logged" grep -q "control socket $SOCK" "$LOG"

echo "== smbclient holds a file open"
echo "held content" >"$DATA_DIR/held.txt"
chown_to "$SMB_USER" "$DATA_DIR/held.txt"
FIFO=$TESTDIR/smbclient.in
mkfifo "$FIFO"
smb data <"$FIFO" >"$TESTDIR/smbclient.out" 2>&1 &
CLIENT_PID=$!
exec 3>"$FIFO"
echo "open held.txt" >&3
STATUS=
for _ in $(seq 1 100); do
    STATUS=$(admin status 2>&1 || true)
    grep -q 'held.txt' <<<"$STATUS" && break
    sleep 0.1
done
printf '%s\n' "$STATUS" | sed 's/^/  | /' >&2
check "status lists one connection from 127.0.0.1" grep -Eq '^  [0-9]+  127\.0\.0\.1:[0-9]+  tcp  dialect 3\.1\.1' <<<"$STATUS"
check "status lists alice's session" grep -Eq '^  0x[0-9a-f]+  ([^ ]*\\)?alice  dialect' <<<"$STATUS"
check "status lists her tree connect of [data]" grep -Eq '^    tree [0-9]+  \[data\]' <<<"$STATUS"
check "status lists the open file with its session" grep -Eq 'session 0x[0-9a-f]+  \[data\] held\.txt  access' <<<"$STATUS"
SID=$(grep -Eo '^  0x[0-9a-f]+  ([^ ]*\\)?alice' <<<"$STATUS" | awk '{print $1}' | head -1)
check "the session id is shown" test -n "$SID"

echo "== debug-connection"
CID=$(grep -Eo '^  [0-9]+  127\.0\.0\.1' <<<"$STATUS" | awk '{print $1}' | head -1)
check "the connection id is shown" test -n "$CID"
check "no request lines at log level 1 before" file_lacks "^.*conn $CID [^ ]*: request " "$LOG"
expect_match "debug-connection turns request lines on" "request lines on" admin debug-connection "$CID" on
echo "ls" >&3
for _ in $(seq 1 100); do
    grep -q "conn $CID [^ ]*: request QUERY_DIRECTORY" "$LOG" && break
    sleep 0.1
done
check "each request of that connection is logged with session, tree, status and latency" \
    grep -Eq "conn $CID [^ ]*: request QUERY_DIRECTORY mid [0-9]+ session 0x${SID#0x} tree [0-9]+ -> STATUS_(SUCCESS|NO_MORE_FILES) [0-9]+ us" "$LOG"
expect_match "debug-connection turns them off" "request lines off" admin debug-connection "$CID" off
expect_fail "debug-connection of an unknown connection fails" "no connection 99999" admin debug-connection 99999 on

echo "== root only"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
expect_fail "another user cannot reach the 0600 socket" 'Permission denied' \
    "${NOBODY[@]}" "$DAXSMBD_ADMIN" -s "$CONF" status
# Even with the file and directory opened up, the daemon checks who is calling.
chmod 0755 "$TESTDIR/run"
chmod 0666 "$SOCK"
expect_fail "with the mode opened up, the peer check still refuses" 'permission denied \(root only\)' \
    "${NOBODY[@]}" "$DAXSMBD_ADMIN" -s "$CONF" status
check "the refusal is logged with the uid" grep -q 'refused a connection from uid 65534' "$LOG"
chmod 0600 "$SOCK"
chmod 0700 "$TESTDIR/run"

echo "== bad requests"
expect_fail "close-session of an unknown id fails" 'no session 0x7777777' admin close-session 0x7777777
expect_fail "close-session of a word fails" "is not a session id" admin close-session alice
expect_fail "close-session without an id is a usage error" 'usage' admin close-session

echo "== close-session"
expect_match "close-session ends alice's session" "closed session $SID of .*alice" admin close-session "$SID"
check "it is logged" grep -q "closed by the administrator" "$LOG"
AFTER=
for _ in $(seq 1 100); do
    AFTER=$(admin status 2>&1 || true)
    grep -q '^Connections: 0$' <<<"$AFTER" && break
    sleep 0.1
done
check "status no longer lists the session" lacks 'alice' "$AFTER"
check "status no longer lists the open file" lacks 'held\.txt' "$AFTER"
check "status shows no connection" grep -q '^Connections: 0$' <<<"$AFTER"
echo "ls" >&3 || true
exec 3>&-
for _ in $(seq 1 100); do
    kill -0 "$CLIENT_PID" 2>/dev/null || break
    sleep 0.1
done
check "the held smbclient has ended" sh -c "! kill -0 $CLIENT_PID 2>/dev/null"
wait "$CLIENT_PID" 2>/dev/null || true
expect_match "a new smbclient connects and reads the file" 'held content' smb data -c 'get held.txt -'
check "the daemon kept running" server_alive

finish
