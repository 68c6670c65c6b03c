#!/bin/bash
# daxsmbd speaks systemd's readiness protocol (sd_notify(3)): a test listener bound on
# NOTIFY_SOCKET (a Unix datagram socket) receives READY=1 once the server listens,
# RELOADING=1 and READY=1 again around a reload (SIGHUP), WATCHDOG=1 keep-alives while
# WATCHDOG_USEC asks for them, STOPPING=1 after SIGTERM, and the daemon exits 0.
#
#   tests/interop/sd_notify_test.sh [path/to/daxsmbd]
set -euo pipefail
DAXSMBD=${1:-$(dirname "$0")/../../build/daxsmbd}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
mkdir "$DIR/share"
PORT=$((20000 + RANDOM % 20000))
printf '[global]\n    smb ports = %s\n    interfaces = 127.0.0.1\n[data]\n    path = %s/share\n' \
    "$PORT" "$DIR" >"$DIR/s.conf"
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); s.settimeout(20)
open(sys.argv[1] + ".bound", "w").close()
while True:
    m = s.recv(256).decode()
    print(m, flush=True)
    if m == "STOPPING=1": break
' "$DIR/notify" >"$DIR/got" &
LISTENER=$!
for _ in $(seq 50); do [ -e "$DIR/notify.bound" ] && break; sleep 0.1; done
NOTIFY_SOCKET=$DIR/notify WATCHDOG_USEC=400000 "$DAXSMBD" -s "$DIR/s.conf" -F >"$DIR/log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do grep -q READY=1 "$DIR/got" && break; sleep 0.1; done
grep -qx READY=1 "$DIR/got" || { echo "FAIL: no READY=1"; cat "$DIR/log"; exit 1; }
for _ in $(seq 100); do [ "$(grep -cx WATCHDOG=1 "$DIR/got")" -ge 3 ] && break; sleep 0.1; done
[ "$(grep -cx WATCHDOG=1 "$DIR/got")" -ge 3 ] ||
    { echo "FAIL: no WATCHDOG=1 keep-alives every 200 ms"; cat "$DIR/got" "$DIR/log"; exit 1; }
kill -HUP "$SERVER"
for _ in $(seq 100); do [ "$(grep -cx READY=1 "$DIR/got")" = 2 ] && break; sleep 0.1; done
[ "$(grep -vx WATCHDOG=1 "$DIR/got" | sed -n 2,3p | tr '\n' ' ')" = "RELOADING=1 READY=1 " ] ||
    { echo "FAIL: no RELOADING=1 then READY=1 on SIGHUP"; cat "$DIR/got" "$DIR/log"; exit 1; }
grep -q 'reload: nothing changed' "$DIR/log" || { echo "FAIL: reload not logged"; cat "$DIR/log"; exit 1; }
kill -TERM "$SERVER"
RC=0; wait "$SERVER" || RC=$?
wait "$LISTENER"
[ "$(grep -vx WATCHDOG=1 "$DIR/got" | sed -n 4p)" = STOPPING=1 ] || { echo "FAIL: no STOPPING=1"; cat "$DIR/log"; exit 1; }
grep -q 'stop: the requests in processing on 0 connections finished' "$DIR/log" ||
    { echo "FAIL: the stop's drain is not logged"; cat "$DIR/log"; exit 1; }
[ "$RC" = 0 ] || { echo "FAIL: daxsmbd exited $RC"; exit 1; }
echo "PASS: READY=1, WATCHDOG=1, RELOADING=1 and READY=1 on SIGHUP, STOPPING=1 received, exit 0"
