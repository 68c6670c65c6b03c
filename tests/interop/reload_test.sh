#!/bin/bash
# Configuration reload without a restart (README "Reloading the configuration"): while one
# smbclient holds a connection open, `daxsmbd-admin reload` adds a share that a new smbclient
# uses; a broken file is refused whole with FILE:LINE and everything stays as it was; SIGHUP
# removes a share, whose tree connects end (NT_STATUS_NETWORK_NAME_DELETED); a [global] change
# is named as needing a restart and not applied.
#
#   tests/interop/reload_test.sh
# shellcheck disable=SC2317 # its functions are run through check and expect_*
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

interop_setup
admin() { "$DAXSMBD_ADMIN" -s "$CONF" "$@"; }

# wait_for REGEX FILE: up to 10 s for a line matching REGEX in FILE.
wait_for() {
    for _ in $(seq 1 100); do
        grep -Eq -- "$1" "$2" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# start_held_client SHARE FIFO OUT: an smbclient on SHARE in the background reading its
# commands from the fifo FIFO (made here; the caller opens it for writing), its output in OUT.
start_held_client() {
    mkfifo "$2"
    smb "$1" <"$2" >"$3" 2>&1 &
}

echo "held content" >"$DATA_DIR/held.txt"
chown_to "$SMB_USER" "$DATA_DIR/held.txt"
start_held_client data "$TESTDIR/first.in" "$TESTDIR/first.out"
FIRST_PID=$!
exec 3>"$TESTDIR/first.in"
echo "get held.txt $TESTDIR/got-before.txt" >&3
check "the first smbclient reads from [data]" wait_for 'held content' "$TESTDIR/got-before.txt"

echo "== reload adds a share"
ADDED_DIR=$TESTDIR/added
mkdir -p "$ADDED_DIR"
chown_to "$SMB_USER" "$ADDED_DIR"
cp "$CONF" "$TESTDIR/server.conf.orig"
cat >>"$CONF" <<EOF

[added]
    path = $ADDED_DIR
    read only = no
EOF
expect_fail "before the reload [added] does not exist" NT_STATUS_BAD_NETWORK_NAME smb added -c ls
expect_match "daxsmbd-admin reload adds it" 'share \[added\] added' admin reload
check "the reload is logged" grep -q 'reload: share \[added\] added' "$LOG"
echo "new share content" >"$TESTDIR/upload.txt"
expect_ok "a new smbclient writes to [added]" smb added -c "put $TESTDIR/upload.txt up.txt"
check "the file is on the new share's disk" cmp -s "$TESTDIR/upload.txt" "$ADDED_DIR/up.txt"
echo "get held.txt $TESTDIR/got-after.txt" >&3
check "the first smbclient keeps working on [data]" wait_for 'held content' "$TESTDIR/got-after.txt"

echo "== a broken file is refused whole"
cp "$CONF" "$TESTDIR/server.conf.good"
cat >>"$CONF" <<EOF

[another]
    path = $DATA_DIR
    no such parameter = 1
EOF
BROKEN_LINE=$(grep -n 'no such parameter' "$CONF" | cut -d: -f1)
expect_fail "reload of a broken file fails with FILE:LINE" \
    "reload refused.*$CONF:$BROKEN_LINE: unknown parameter" admin reload
check "the refusal is logged" grep -q "reload refused, the running configuration stays: $CONF:$BROKEN_LINE" "$LOG"
expect_fail "the broken file's share does not exist" NT_STATUS_BAD_NETWORK_NAME smb another -c ls
expect_ok "[added] is still served" smb added -c 'get up.txt /dev/null'
echo "get held.txt $TESTDIR/got-broken.txt" >&3
check "the first smbclient still works" wait_for 'held content' "$TESTDIR/got-broken.txt"
# A share whose path cannot be opened refuses the whole reload too.
cp "$TESTDIR/server.conf.good" "$CONF"
printf '\n[gone]\n    path = %s/does-not-exist\n' "$TESTDIR" >>"$CONF"
expect_fail "a share that cannot be opened is refused" 'share \[gone\]: cannot open path' admin reload

echo "== SIGHUP removes a share and names what needs a restart"
start_held_client added "$TESTDIR/second.in" "$TESTDIR/second.out"
SECOND_PID=$!
exec 4>"$TESTDIR/second.in"
echo "get up.txt $TESTDIR/got-second.txt" >&4
check "a second smbclient reads from [added]" wait_for 'new share content' "$TESTDIR/got-second.txt"
NEW_PORT=$(free_port)
sed "s/smb ports = $PORT/smb ports = $NEW_PORT/" "$TESTDIR/server.conf.orig" >"$CONF"
kill -HUP "$SERVER_PID"
check "SIGHUP reloads" wait_for 'SIGHUP: reloading' "$LOG"
check "the share is removed and its tree connect ended" \
    wait_for 'reload: share \[added\] removed \(1 tree connects ended\)' "$LOG"
check "the port change needs a restart" \
    grep -q "reload: needs a restart: \[global\] 'smb ports' = '$NEW_PORT' (running: '$PORT')" "$LOG"
# smbclient's output to a pipe is buffered: read it once it has ended.
echo "get up.txt $TESTDIR/got-removed.txt" >&4
exec 4>&-
wait "$SECOND_PID" 2>/dev/null || true
sed 's/^/  | /' "$TESTDIR/second.out" >&2
check "the client on the removed share gets NETWORK_NAME_DELETED" \
    grep -q 'NT_STATUS_NETWORK_NAME_DELETED' "$TESTDIR/second.out"
check "and no file" test ! -e "$TESTDIR/got-removed.txt"
expect_fail "a new connection to [added] is refused" NT_STATUS_BAD_NETWORK_NAME smb added -c ls
check "the server still listens on its port" port_listening "$PORT"
check "and not on the new one" sh -c "! ss -ltnH 'sport = :$NEW_PORT' | grep -q ."
echo "get held.txt $TESTDIR/got-hup.txt" >&3
check "the first smbclient still works" wait_for 'held content' "$TESTDIR/got-hup.txt"

exec 3>&-
wait "$FIRST_PID" 2>/dev/null || true
check "the daemon kept running" server_alive
finish
