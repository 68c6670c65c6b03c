#!/bin/bash
# daxsmbd speaks systemd's readiness protocol (sd_notify(3)): a test listener bound on
# NOTIFY_SOCKET (a Unix datagram socket) receives READY=1 once the server listens and
# STOPPING=1 after SIGTERM, and the daemon exits 0.
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
for _ in range(2):
    print(s.recv(256).decode(), flush=True)
' "$DIR/notify" >"$DIR/got" &
LISTENER=$!
for _ in $(seq 50); do [ -e "$DIR/notify.bound" ] && break; sleep 0.1; done
NOTIFY_SOCKET=$DIR/notify "$DAXSMBD" -s "$DIR/s.conf" -F >"$DIR/log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do grep -q READY=1 "$DIR/got" && break; sleep 0.1; done
grep -qx READY=1 "$DIR/got" || { echo "FAIL: no READY=1"; cat "$DIR/log"; exit 1; }
kill -TERM "$SERVER"
RC=0; wait "$SERVER" || RC=$?
wait "$LISTENER"
grep -qx STOPPING=1 "$DIR/got" || { echo "FAIL: no STOPPING=1"; cat "$DIR/log"; exit 1; }
[ "$RC" = 0 ] || { echo "FAIL: daxsmbd exited $RC"; exit 1; }
echo "PASS: READY=1 and STOPPING=1 received, exit 0"
