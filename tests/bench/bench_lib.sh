# shellcheck shell=bash disable=SC2034  # variables here are read by the scripts sourcing it
# Shared by tests/bench/compare.sh and scale.sh: daxsmbd and a private Samba on free loopback
# ports, each with its own share directory under one BENCH_DIR (same file system), stopped by
# their PIDs on exit.
#
#   . "$(dirname "$0")/bench_lib.sh"
#   bench_init NAME          # checks, BENCH_DIR, PEER_DIR, EXIT trap (KEEP=1 keeps BENCH_DIR)
#   bench_shares SIZE_BYTES  # DAX_SHARE and SAMBA_SHARE, both with bench.dat (same random data)
#   bench_start_daxsmbd      # DAX_PID DAX_PORT (BENCH_DAX_GLOBAL: extra [global] lines,
#                            #   BENCH_DAX_SHARE: extra [data] lines, e.g. "use sendfile = no")
#   bench_start_samba        # SAMBA_PID SAMBA_PORT (the main smbd; it forks one per connection)
# Environment: DAXSMBD_BUILD (default <repo>/build), BENCH_DIR (default a new
# /var/tmp/daxsmbd-bench.XXXXXX), PIN_CPU (taskset -c for the servers).

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${DAXSMBD_BUILD:-$BENCH_ROOT/build}
# The private Samba (tests/peer/samba-peer.sh).
PEER=$BENCH_ROOT/tests/peer
BENCH_NAME=bench
DAX_PID="" SAMBA_STARTED=0 KEEP=${KEEP:-0}
PIN=()
[ -n "${PIN_CPU:-}" ] && PIN=(taskset -c "$PIN_CPU")

log() { printf '[%s %s] %s\n' "$BENCH_NAME" "$(date +%T)" "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_listen() { # PORT PID
    for _ in $(seq 1 200); do
        ss -ltnH "sport = :$1" | grep -q . && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

size_bytes() { # 256m -> 268435456
    /usr/bin/python3 -c '
import sys; s=sys.argv[1]; m={"k":1<<10,"m":1<<20,"g":1<<30}
print(int(float(s[:-1])*m[s[-1].lower()]) if s[-1].lower() in m else int(s))' "$1"
}

bench_cleanup() {
    local rc=$?
    if [ -n "$DAX_PID" ] && kill -0 "$DAX_PID" 2>/dev/null; then
        kill -TERM "$DAX_PID" 2>/dev/null || true
        wait "$DAX_PID" 2>/dev/null || true
    fi
    if [ "$SAMBA_STARTED" = 1 ]; then "$PEER/samba-peer.sh" stop >/dev/null 2>&1 || true; fi
    if [ "$KEEP" = 1 ]; then
        log "kept $BENCH_DIR"
    else
        rm -rf "$BENCH_DIR/dax" "$BENCH_DIR/peer"
        rmdir "$BENCH_DIR" 2>/dev/null || true
    fi
    exit "$rc"
}

bench_init() { # NAME
    BENCH_NAME=$1
    for b in daxsmbd daxsmbd-admin daxsmbd-load; do
        [ -x "$BUILD/$b" ] || die "$BUILD/$b is not built (ninja -C build daxsmbd daxsmbd-admin daxsmbd-load)"
    done
    command -v smbd >/dev/null || die "smbd missing (.ci/install-deps.sh)"
    [ -x "$PEER/samba-peer.sh" ] || die "no $PEER/samba-peer.sh"
    BENCH_DIR=${BENCH_DIR:-$(mktemp -d /var/tmp/daxsmbd-bench.XXXXXX)}
    mkdir -p "$BENCH_DIR"
    chmod 755 "$BENCH_DIR"
    export PEER_DIR=$BENCH_DIR/peer
    DAX_SHARE=$BENCH_DIR/dax/share
    SAMBA_SHARE=$PEER_DIR/share
    mkdir -p "$DAX_SHARE" "$SAMBA_SHARE"
    chmod 1777 "$DAX_SHARE" "$SAMBA_SHARE"
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}

bench_shares() { # SIZE_BYTES
    log "bench dir $BENCH_DIR; test file bench.dat, $1 bytes of random data on both shares"
    head -c "$1" /dev/urandom >"$BENCH_DIR/src.dat"
    for d in "$DAX_SHARE" "$SAMBA_SHARE"; do
        cp "$BENCH_DIR/src.dat" "$d/bench.dat"
        chmod 666 "$d/bench.dat"
    done
    rm -f "$BENCH_DIR/src.dat"
    sync
}

bench_start_daxsmbd() {
    DAX_PORT=$(free_port)
    DAX_CONF=$BENCH_DIR/dax/daxsmbd.conf
    cat >"$DAX_CONF" <<EOC
# written by tests/bench/bench_lib.sh
[global]
    smb ports = $DAX_PORT
    interfaces = 127.0.0.1
    user database = $BENCH_DIR/dax/users.db
    log level = 0
${BENCH_DAX_GLOBAL:-}
[data]
    path = $DAX_SHARE
    read only = no
${BENCH_DAX_SHARE:-}
EOC
    # Both servers act as the Unix account alice on disk (tests/peer/samba-peer.sh makes the
    # same account), so the comparison includes the cost of per-user credentials on each side.
    id alice >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin alice
    [ -e "$BENCH_DIR/dax/users.db" ] || printf 'pw\n' | "$BUILD/daxsmbd-admin" -s "$DAX_CONF" user add alice >/dev/null
    "${PIN[@]}" "$BUILD/daxsmbd" -s "$DAX_CONF" -F </dev/null >"$BENCH_DIR/dax/daxsmbd.log" 2>&1 &
    DAX_PID=$!
    wait_listen "$DAX_PORT" "$DAX_PID" || {
        cat "$BENCH_DIR/dax/daxsmbd.log" >&2
        die "daxsmbd did not start"
    }
    log "daxsmbd pid $DAX_PID on 127.0.0.1:$DAX_PORT"
}

bench_start_samba() {
    SAMBA_PORT=$(free_port)
    export SMB_PORT=$SAMBA_PORT
    "$PEER/samba-peer.sh" setup >/dev/null 2>&1 || die "samba-peer.sh setup failed"
    SAMBA_STARTED=1
    "${PIN[@]}" "$PEER/samba-peer.sh" start >/dev/null 2>&1 || die "samba-peer.sh start failed (see $PEER_DIR/samba/log)"
    SAMBA_PID=$(cat "$PEER_DIR/samba/smbd.launch.pid")
    log "Samba $(smbd -V) pid $SAMBA_PID on 127.0.0.1:$SAMBA_PORT"
}

bench_stop_samba() {
    if [ "$SAMBA_STARTED" = 1 ]; then "$PEER/samba-peer.sh" stop >/dev/null 2>&1 || true; fi
    SAMBA_STARTED=0
}

bench_stop_daxsmbd() {
    if [ -n "$DAX_PID" ] && kill -0 "$DAX_PID" 2>/dev/null; then
        kill -TERM "$DAX_PID" 2>/dev/null || true
        wait "$DAX_PID" 2>/dev/null || true
    fi
    DAX_PID=""
}
