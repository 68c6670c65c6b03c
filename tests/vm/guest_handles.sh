#!/bin/bash
# Guest half of tests/vm/handles.sh (runs as root inside the VM): the kernel client copies a
# 64 MiB file onto a plain share mounted with its default cache mode (it asks for a lease and a
# durable handle); 1-2 s into the copy, while the client waits for a WRITE response, the
# server's end of the TCP connection is killed (ss -K, else a TCP reset from iptables or nft). The client reconnects and re-binds its open
# through the durable handle; the copy must end well and the file on the server's disk must be
# byte for byte the source.
set -u
# shellcheck source=tests/vm/guest_common.sh disable=SC1091
. "${VMRUN_HOST:-/host}/guest_common.sh"
SIZE_MB=64
SRC=/tmp/src/handles.bin
SHARE_DIR=/srv/handles
DST=$SHARE_DIR/copy.bin
MNT=/mnt/handles
COPY_TIMEOUT=120

mkdir -p "$SHARE_DIR" /tmp/src
chmod 777 "$SHARE_DIR"
head -c $((SIZE_MB << 20)) /dev/urandom >"$SRC"
echo "guest: $(uname -r)"

server_start handles "[global]
smb ports = $PORT
interfaces = 127.0.0.1
user database = /tmp/users.db
log level = 1
[handles]
path = $SHARE_DIR
read only = no
dax = off" || {
    bad "server start"
    finish
    exit 1
}

mkdir -p "$MNT"
if mount -t cifs //127.0.0.1/handles "$MNT" \
    -o "vers=3.1.1,username=$USER_NAME,password=$USER_PASS,port=$PORT"; then
    ok "kernel client mounted //127.0.0.1/handles (default cache mode)"
else
    bad "kernel client mount"
    dmesg | tail -5
    finish
    exit 1
fi
# The client's reconnect messages are debug messages: cifsFYI turns them on, dynamic debug picks
# only those that speak of reconnecting (every other one stays quiet).
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
echo 1 >/proc/fs/cifs/cifsFYI 2>/dev/null || true
echo 'module cifs format econnect +p' >/sys/kernel/debug/dynamic_debug/control 2>/dev/null ||
    echo "   (no dynamic debug: only the client's default messages in dmesg)"
grep -o 'cache=[a-z]*' /proc/mounts | sort -u | sed 's/^/   mount option /'
dmesg -C
stats_before=$(grep 'reconnects' /proc/fs/cifs/Stats)

# The copy, in the background, 1 MiB per write with O_DIRECT: one WRITE in flight at a time,
# sent and then waited for. With buffered writes (writeback keeps the socket busy) the kill
# often lands in the middle of a send, and the 6.1 client turns any send error into
# ECONNABORTED, which it does not retry: those pages are dropped and fsync fails, durable
# handle or not. Here the kill lands while the client waits for a response (below), which it
# retries after reconnecting.
dd if="$SRC" of="$MNT/copy.bin" bs=1M oflag=direct status=none &
CPID=$!
T0=$SECONDS
# Wait for the copy to reach the server (a first MiB on disk), then let it run a second more.
for _ in $(seq 300); do
    [ "$(stat -c %s "$DST" 2>/dev/null || echo 0)" -ge $((1 << 20)) ] && break
    kill -0 "$CPID" 2>/dev/null || break
    sleep 0.1
done
sleep 1
# client_unsent: bytes the client's socket has not had acknowledged (Send-Q).
client_unsent() { ss -tnH "( dport = :$PORT )" | awk '{ q += $3 } END { print q + 0 }'; }
# Stop the server until the client has sent its WRITE in full (it then waits for the response);
# a WRITE too large for the socket buffers: let the server go on and try again.
quiet=""
# shellcheck disable=SC2153  # SPID: set by server_start (guest_common.sh)
for _ in $(seq 10); do
    kill -STOP "$SPID"
    for _ in $(seq 20); do
        [ "$(client_unsent)" = 0 ] && quiet=1 && break
        sleep 0.1
    done
    [ -n "$quiet" ] && break
    kill -CONT "$SPID"
    sleep 0.3
done
at_kill=$(stat -c %s "$DST" 2>/dev/null || echo 0)
if kill -0 "$CPID" 2>/dev/null; then
    ok "copy still running at the kill, $((at_kill >> 20)) of $SIZE_MB MiB on the server's disk after $((SECONDS - T0)) s"
else
    bad "the copy was over before the kill ($((at_kill >> 20)) MiB): nothing to prove"
fi
[ -n "$quiet" ] || echo "   (the client was still sending at the kill)"
ss -tnH "( sport = :$PORT )" | sed 's/^/   server socket before: /'

# Kill the server's end of the connection.
how=""
ss -K -tnH "( sport = :$PORT )" | grep -q . && how="ss -K"
kill -CONT "$SPID"
if [ -z "$how" ] && command -v iptables >/dev/null; then
    iptables -I INPUT -p tcp --dport "$PORT" -j REJECT --reject-with tcp-reset &&
        sleep 1 && iptables -D INPUT -p tcp --dport "$PORT" -j REJECT --reject-with tcp-reset &&
        how="iptables REJECT --reject-with tcp-reset for 1 s"
elif [ -z "$how" ] && command -v nft >/dev/null; then
    nft add table inet handles && nft add chain inet handles in '{ type filter hook input priority 0; }' &&
        nft add rule inet handles in tcp dport "$PORT" reject with tcp reset && sleep 1 &&
        nft delete table inet handles && how="nft reject with tcp reset for 1 s"
fi
if [ -n "$how" ]; then ok "server's TCP connection killed with $how"; else
    bad "no way to kill the connection (ss -K unsupported: CONFIG_INET_DIAG_DESTROY; no iptables, no nft)"
fi

# The copy must end, and well, in time.
deadline=$((SECONDS + COPY_TIMEOUT))
while kill -0 "$CPID" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.5; done
if kill -0 "$CPID" 2>/dev/null; then
    bad "copy still running ${COPY_TIMEOUT} s after the kill"
    kill "$CPID" 2>/dev/null
    crc=timeout
else
    crc=0
    wait "$CPID" || crc=$?
    check "copy ended with status 0 ($((SECONDS - T0)) s in all)" test "$crc" = 0
fi
stats_after=$(grep 'reconnects' /proc/fs/cifs/Stats)
echo "   client reconnect counters: before: $stats_before; after: $stats_after"
ss -tnH "( sport = :$PORT )" | sed 's/^/   server socket after: /'
echo "   client dmesg:"
dmesg | grep -i -E 'cifs|smb' | tail -25 | sed 's/^/    | /'
check "the client reconnected (its reconnect counters went up)" \
    test "$stats_before" != "$stats_after"
umount "$MNT" || { sleep 2; umount "$MNT"; } || bad "umount"

check "server-side sha256 equals the source's ($SIZE_MB MiB)" same_sha "$SRC" "$DST"
echo "   server log:"
grep -E 'durable handle|connection|reconnect' "$SLOG" | tail -20 | sed 's/^/    | /'
# The copy alone would end well without durable handles too (the client then opens the file anew
# and sends its cached pages again): the server's log is what shows the open was re-bound.
check "server kept the durable handle when the connection was lost" \
    grep -q "durable handle '.*' kept for [0-9]* ms after its connection was lost" "$SLOG"
check "server re-bound the durable handle on the new connection" \
    grep -q "durable handle '.*' reconnected (v[12])" "$SLOG"
check "no durable handle expired or was broken" sh -c "! grep -q \"durable handle '.*' closed (\" '$SLOG'"
server_stop
check "server survived (no crash)" sh -c "! grep -q -E 'Segmentation|Bus error|AddressSanitizer' '$SLOG'"
finish
