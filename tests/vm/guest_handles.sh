#!/bin/bash
# Guest half of tests/vm/handles.sh (runs as root inside the VM), two scenarios in one boot. In
# each, the kernel client copies a 64 MiB file onto a share mounted with its default cache mode,
# and 1-2 s into the copy, while the client waits for a WRITE response, the server is cut off:
#   1. durable: a plain share (the client asks for a lease and a durable handle); the server's
#      end of the TCP connection is killed (ss -K, else a TCP reset from iptables or nft). The
#      client reconnects and re-binds its open through the durable handle.
#   2. persistent: a share with "continuous availability = yes" (the client asks for a
#      persistent handle); the server is killed with SIGKILL and started again. The new server
#      restores the handle from the share's journal and the client reconnects it.
# Either way the copy must end well and the file on the server's disk must be byte for byte the
# source.
set -u
# shellcheck source=tests/vm/guest_common.sh disable=SC1091
. "${VMRUN_HOST:-/host}/guest_common.sh"
SIZE_MB=64
SRC=/tmp/src/handles.bin
COPY_TIMEOUT=120
mkdir -p /tmp/src
head -c $((SIZE_MB << 20)) /dev/urandom >"$SRC"
echo "guest: $(uname -r)"

# client_unsent: bytes the client's socket has not had acknowledged (Send-Q).
client_unsent() { ss -tnH "( dport = :$PORT )" | awk '{ q += $3 } END { print q + 0 }'; }

# kill_connection: kills the server's end of the client's TCP connection; prints how.
kill_connection() {
    if ss -K -tnH "( sport = :$PORT )" | grep -q .; then echo "ss -K"; return; fi
    kill -CONT "$SPID"
    if command -v iptables >/dev/null; then
        iptables -I INPUT -p tcp --dport "$PORT" -j REJECT --reject-with tcp-reset &&
            sleep 1 && iptables -D INPUT -p tcp --dport "$PORT" -j REJECT --reject-with tcp-reset &&
            echo "iptables REJECT --reject-with tcp-reset for 1 s"
    elif command -v nft >/dev/null; then
        nft add table inet handles && nft add chain inet handles in '{ type filter hook input priority 0; }' &&
            nft add rule inet handles in tcp dport "$PORT" reject with tcp reset && sleep 1 &&
            nft delete table inet handles && echo "nft reject with tcp reset for 1 s"
    fi
}

# scenario NAME SHARE_EXTRA CUT: the copy onto share NAME (extra share lines SHARE_EXTRA), cut
# off by CUT: "connection" (the TCP connection killed) or "restart" (the server killed with
# SIGKILL and started again).
scenario() {
    local name=$1 extra=$2 cut=$3
    local share_dir=/srv/$name mnt=/mnt/$name conf
    local dst=$share_dir/copy.bin
    echo "== $name: the copy survives $([ "$cut" = restart ] && echo "a SIGKILL and restart of the server" || echo "a killed TCP connection")"
    mkdir -p "$share_dir"
    chmod 777 "$share_dir"
    conf="[global]
smb ports = $PORT
interfaces = 127.0.0.1
user database = /tmp/users.db
log level = 1
[$name]
path = $share_dir
read only = no
dax = off
$extra"
    server_start "$name" "$conf" || {
        bad "$name: server start"
        return
    }
    local log1=$SLOG
    mkdir -p "$mnt"
    if mount -t cifs "//127.0.0.1/$name" "$mnt" \
        -o "vers=3.1.1,username=$USER_NAME,password=$USER_PASS,port=$PORT"; then
        ok "$name: kernel client mounted //127.0.0.1/$name (default cache mode)"
    else
        bad "$name: kernel client mount"
        dmesg | tail -5
        server_stop
        return
    fi
    grep -o 'cache=[a-z]*' /proc/mounts | sort -u | sed 's/^/   mount option /'
    dmesg -C
    local stats_before stats_after
    stats_before=$(grep 'reconnects' /proc/fs/cifs/Stats)

    # The copy, in the background, 1 MiB per write with O_DIRECT: one WRITE in flight at a
    # time, sent and then waited for. With buffered writes (writeback keeps the socket busy)
    # the cut often lands in the middle of a send, and the 6.1 client turns any send error into
    # ECONNABORTED, which it does not retry: those pages are dropped and fsync fails, durable
    # handle or not. Here the cut lands while the client waits for a response (below), which
    # it retries after reconnecting.
    dd if="$SRC" of="$mnt/copy.bin" bs=1M oflag=direct status=none &
    local cpid=$! t0=$SECONDS
    # Wait for the copy to reach the server (a first MiB on disk), then let it run up to a
    # second more, but cut at a quarter of the file at the latest: under KVM the whole copy
    # takes less than a second, and a cut after it proves nothing.
    for _ in $(seq 300); do
        [ "$(stat -c %s "$dst" 2>/dev/null || echo 0)" -ge $((1 << 20)) ] && break
        kill -0 "$cpid" 2>/dev/null || break
        sleep 0.1
    done
    for _ in $(seq 50); do
        [ "$(stat -c %s "$dst" 2>/dev/null || echo 0)" -ge $((SIZE_MB << 18)) ] && break
        sleep 0.02
    done
    # Stop the server until the client has sent its WRITE in full (it then waits for the
    # response); a WRITE too large for the socket buffers: let the server go on, try again.
    local quiet=""
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
    local at_kill
    at_kill=$(stat -c %s "$dst" 2>/dev/null || echo 0)
    if kill -0 "$cpid" 2>/dev/null; then
        ok "$name: copy still running at the cut, $((at_kill >> 20)) of $SIZE_MB MiB on the server's disk after $((SECONDS - t0)) s"
    else
        bad "$name: the copy was over before the cut ($((at_kill >> 20)) MiB): nothing to prove"
    fi
    [ -n "$quiet" ] || echo "   (the client was still sending at the cut)"

    if [ "$cut" = restart ]; then
        kill -KILL "$SPID"
        wait "$SPID" 2>/dev/null
        SPID=
        ok "$name: server killed with SIGKILL"
        if server_start "$name-restarted" "$conf"; then
            ok "$name: server started again"
        else
            bad "$name: server restart"
        fi
    else
        local how
        how=$(kill_connection)
        kill -CONT "$SPID"
        if [ -n "$how" ]; then ok "$name: server's TCP connection killed with $how"; else
            bad "$name: no way to kill the connection (ss -K unsupported: CONFIG_INET_DIAG_DESTROY; no iptables, no nft)"
        fi
    fi

    # The copy must end, and well, in time.
    local deadline=$((SECONDS + COPY_TIMEOUT)) crc
    while kill -0 "$cpid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.5; done
    if kill -0 "$cpid" 2>/dev/null; then
        bad "$name: copy still running ${COPY_TIMEOUT} s after the cut"
        kill "$cpid" 2>/dev/null
    else
        crc=0
        wait "$cpid" || crc=$?
        check "$name: copy ended with status 0 ($((SECONDS - t0)) s in all)" test "$crc" = 0
    fi
    stats_after=$(grep 'reconnects' /proc/fs/cifs/Stats)
    echo "   client reconnect counters: before: $stats_before; after: $stats_after"
    echo "   client dmesg:"
    dmesg | grep -i -E 'cifs|smb' | tail -15 | sed 's/^/    | /'
    check "$name: the client reconnected (its reconnect counters went up)" \
        test "$stats_before" != "$stats_after"
    umount "$mnt" || { sleep 2; umount "$mnt"; } || bad "$name: umount"
    check "$name: server-side sha256 equals the source's ($SIZE_MB MiB)" same_sha "$SRC" "$dst"
    echo "   server log:"
    grep -h -E 'handle|connection|reconnect' "$log1" "$SLOG" | sort -u | tail -20 | sed 's/^/    | /'
    # The copy alone would end well without durable handles too (the client then opens the
    # file anew and sends its cached pages again): the server's log shows the open was re-bound.
    if [ "$cut" = restart ]; then
        check "$name: the restarted server restored the persistent handle" \
            grep -q "1 persistent handles restored" "$SLOG"
    else
        check "$name: server kept the durable handle when the connection was lost" \
            grep -q "durable handle '.*' kept for [0-9]* ms after its connection was lost" "$SLOG"
    fi
    check "$name: server re-bound the handle on the new connection" \
        grep -q "durable handle '.*' reconnected (v[12])" "$SLOG"
    check "$name: no handle expired or was broken" \
        sh -c "! grep -q \"durable handle '.*' closed (\" '$SLOG'"
    server_stop
    check "$name: server survived (no crash)" \
        sh -c "! grep -q -E 'Segmentation|Bus error|AddressSanitizer' '$SLOG'"
}

# The client's reconnect messages are debug messages: cifsFYI turns them on, dynamic debug
# picks only those that speak of reconnecting (every other one stays quiet).
modprobe cifs 2>/dev/null || true
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
echo 1 >/proc/fs/cifs/cifsFYI 2>/dev/null || true
echo 'module cifs format econnect +p' >/sys/kernel/debug/dynamic_debug/control 2>/dev/null ||
    echo "   (no dynamic debug: only the client's default messages in dmesg)"

for s in durable persistent; do
    case $s in
    durable) scenario handles "" connection ;;
    persistent) scenario persistent "continuous availability = yes" restart ;;
    esac
done
finish
