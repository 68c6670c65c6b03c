#!/bin/bash
# shellcheck disable=SC2317  # load() and positive() are called through expect_ok and check
# Smoke test of the load generator (tests/bench/load_main.cpp, build/daxsmbd-load): against a
# fresh daxsmbd it writes a small test file through SMB, runs 2 s of 4 KiB random reads
# (2 connections x QD 4, pipelined, both polled by one thread), 1 s of random writes and a short scale probe, and checks
# the JSON lines: I/Os done, no errors, the server's CPU time measured, and the data the writes
# left in the share file. Not a benchmark (the figures are printed, never compared).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

LOAD=${DAXSMBD_LOAD:-$DAXSMBD_BUILD/daxsmbd-load}
if [ ! -x "$LOAD" ]; then
    echo "$TEST_NAME: SKIP: $LOAD is not built"
    exit 77
fi

interop_setup

load() {
    timeout -k 5 120 "$LOAD" --host 127.0.0.1 --port "$PORT" --share data --user "$SMB_USER" \
        --password "$SMB_PASS" --file bench/smoke.dat --size 8m --server-pid "$SERVER_PID" "$@"
}
# json FIELD LINE: a number field of the JSON line (top level or inside one object).
json() { /usr/bin/python3 -c 'import json,sys; v=json.loads(sys.argv[2]); [v := v[k] for k in sys.argv[1].split(".")]; print(v)' "$1" "$2"; }
positive() { /usr/bin/python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)' "$1"; }

mkdir -p "$DATA_DIR/bench"
chmod 1777 "$DATA_DIR/bench"

expect_ok "randread 2 s, 2 connections x QD4 on one polling thread (file prepared through SMB)" \
    load --op randread --bs 4k --conns 2 --qd 4 --threads 1 --duration 2 --ramp 0.5
line=$(grep '^{' <<<"$OUT" | tail -n 1)
printf '%s\n' "$OUT" | sed 's/^/       | /'
check "the test file was written through SMB with its full size" \
    test "$(stat -c %s "$DATA_DIR/bench/smoke.dat" 2>/dev/null)" = 8388608
check "the JSON line reports I/Os" positive "$(json iops "$line" 2>/dev/null || echo 0)"
check "... no errors" test "$(json errors "$line" 2>/dev/null)" = 0
check "... no short reads" test "$(json short_io "$line" 2>/dev/null)" = 0
check "... SMB 3.1.1" test "$(json dialect "$line" 2>/dev/null)" = 3.1.1
check "... a p99 latency" positive "$(json lat_us.p99 "$line" 2>/dev/null || echo 0)"
check "... the server's CPU time (>= 0)" \
    /usr/bin/python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0 else 1)' \
    "$(json server_cpu_s "$line" 2>/dev/null || echo -1)"

# Writes change the file: a zeroed copy must no longer be all zeros afterwards.
head -c 8M /dev/zero >"$DATA_DIR/bench/smoke.dat"
expect_ok "randwrite 1 s, write-through, signed" \
    load --op randwrite --bs 4k --qd 2 --duration 1 --ramp 0 --write-through --sign --prepare never
line=$(grep '^{' <<<"$OUT" | tail -n 1)
check "writes: I/Os and no errors" test "$(json errors "$line" 2>/dev/null)" = 0 -a \
    "$(json writes "$line" 2>/dev/null || echo 0)" -gt 0
check "the writes reached the file" \
    test "$(tr -d '\0' <"$DATA_DIR/bench/smoke.dat" | head -c 1 | wc -c)" = 1

expect_ok "scale mode: 20 idle connections (from 3 source addresses) and a 1 s probe" \
    load --scale 20 --conns-per-source 8 --duration 1 --ramp 0 --prepare never
line=$(grep '^{' <<<"$OUT" | tail -n 1)
printf '%s\n' "$OUT" | sed 's/^/       | /'
check "scale: all 20 opened and still connected" test "$(json alive "$line" 2>/dev/null)" = 20
check "scale: the server's descriptors grew by at least 20" \
    test "$(($(json after.fds "$line") - $(json before.fds "$line")))" -ge 20
check "scale: the probe did I/O in both phases" \
    positive "$(json probe_loaded.iops "$line" 2>/dev/null || echo 0)"

expect_fail "a wrong password is reported, not hung" "LOGON_FAILURE|LogonFailure|logon" \
    timeout -k 5 60 "$LOAD" --host 127.0.0.1 --port "$PORT" --share data --user "$SMB_USER" \
    --password wrong --file bench/smoke.dat --size 8m --duration 1 --prepare never

finish
