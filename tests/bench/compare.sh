#!/bin/bash
# daxsmbd against Samba, side by side, in one run on this machine (not part of the test command:
# benchmarks are not timed tests).
#
# Starts build/daxsmbd (generated configuration, a free loopback port, a temp share) and a
# private Samba (tests/peer/samba-peer.sh, its own PEER_DIR and port) on two share
# directories holding the same test file (random data, copied from one source), then, per
# repetition and case, measures both servers with our load generator (build/daxsmbd-load, which
# also reads the server's CPU time from /proc) and with the third-party libsmbclient client
# (build/smbload, tests/bench/smbload_main.cpp), plus local fio on the same file (the no-network
# limit) and iperf3 on loopback (the network limit). Prints one table of medians.
#
#   tests/bench/compare.sh [--duration SEC] [--ramp SEC] [--repeats N] [--size SIZE]
#                          [--cases LIST] [--no-smbload] [--no-limits] [--keep] [--out DIR]
#
#   --duration 10 --ramp 1 --repeats 3 --size 256m are the defaults; a quick look:
#   tests/bench/compare.sh --duration 2 --repeats 1
#   --cases: comma-separated case names of the table (e.g. rr1,rr8), default all:
#            rr1 4K randread QD1, rr8 4K randread 8 workers, rw1 4K randwrite QD1,
#            rw8 4K randwrite 8 workers, rwt 4K randwrite write-through (QD1), sr 1 MiB seqread,
#            sw 1 MiB seqwrite
#   "8 workers" = 8 connections with one request in flight each (smbload's --workers 8).
#
# Environment: DAXSMBD_BUILD (build dir, default <repo>/build), BENCH_DIR (where the shares go;
# default a new /var/tmp/daxsmbd-bench.XXXXXX, removed at the end unless --keep), PIN_CPU (run
# servers and clients under `taskset -c PIN_CPU`), LOAD_THREADS (daxsmbd-load --threads, 2).
# Results (OUT, default /tmp/daxsmbd-compare-DATE): raw.jsonl (one line per measurement),
# env.txt, table.md, errors.log.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
ROOT=$BENCH_ROOT
DURATION=10 RAMP=1 REPEATS=3 SIZE=256m CASES=rr1,rr8,rw1,rw8,rwt,sr,sw
SMBLOAD=1 LIMITS=1 OUT=
# daxsmbd-load's client threads: one per core, each polling its share of the connections (its
# CPU per I/O is about half of one blocking thread per connection's).
LOAD_THREADS=${LOAD_THREADS:-2}
while [ $# -gt 0 ]; do
    case $1 in
        --duration) DURATION=$2; shift ;;
        --ramp) RAMP=$2; shift ;;
        --repeats) REPEATS=$2; shift ;;
        --size) SIZE=$2; shift ;;
        --cases) CASES=$2; shift ;;
        --no-smbload) SMBLOAD=0 ;;
        --no-limits) LIMITS=0 ;;
        --keep) KEEP=1 ;;
        --out) OUT=$2; shift ;;
        -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

bench_init compare
for t in fio iperf3; do command -v "$t" >/dev/null || die "$t missing (.ci/install-deps.sh)"; done
if [ "$SMBLOAD" = 1 ] && [ ! -x "$BUILD/smbload" ]; then
    die "$BUILD/smbload is not built (ninja -C build smbload; it needs libsmbclient-dev), or use --no-smbload"
fi

TMO=$(awk -v d="$DURATION" -v r="$RAMP" 'BEGIN { print int(d + r) + 120 }')  # per client run
SIZE_BYTES=$(size_bytes "$SIZE")

OUT=${OUT:-/tmp/daxsmbd-compare-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
RAW=$OUT/raw.jsonl
: >"$RAW"
bench_shares "$SIZE_BYTES"
bench_start_daxsmbd
bench_start_samba

# ---------------------------------------------------------------- measurements
# case -> "op bs conns write-through"
declare -A CASE_ARGS=(
    [rr1]="randread 4k 1 0" [rr8]="randread 4k 8 0" [rw1]="randwrite 4k 1 0"
    [rw8]="randwrite 4k 8 0" [rwt]="randwrite 4k 1 1" [sr]="seqread 1m 1 0" [sw]="seqwrite 1m 1 0"
)
IFS=, read -r -a CASE_LIST <<<"$CASES"
for c in "${CASE_LIST[@]}"; do [ -n "${CASE_ARGS[$c]:-}" ] || die "unknown case $c"; done

warm() { cat "$1" >/dev/null; }
record() { # rep case server tool JSON
    local line=$5
    [ -n "$line" ] || line='{"error":"no output"}'
    printf '{"rep":%s,"case":"%s","server":"%s","tool":"%s","r":%s}\n' "$1" "$2" "$3" "$4" "$line" >>"$RAW"
}

run_load() { # rep case server port pid tree-flag
    local rep=$1 c=$2 srv=$3 port=$4 pid=$5 tree=$6 op bs conns wt out
    read -r op bs conns wt <<<"${CASE_ARGS[$c]}"
    local args=(--host 127.0.0.1 --port "$port" --share data --user alice --password pw
        --file bench.dat --size "$SIZE" --prepare never --op "$op" --bs "$bs" --conns "$conns"
        --qd 1 --threads "$LOAD_THREADS" --duration "$DURATION" --ramp "$RAMP" --server-pid "$pid"
        --label "$c/$srv" --quiet)
    [ "$wt" = 1 ] && args+=(--write-through)
    [ "$tree" = 1 ] && args+=(--server-tree)
    out=$("${PIN[@]}" timeout -k 5 "$TMO" "$BUILD/daxsmbd-load" "${args[@]}" 2>>"$OUT/errors.log" | grep '^{' | tail -n 1 || true)
    record "$rep" "$c" "$srv" load "$out"
}

run_smbload() { # rep case server port
    local rep=$1 c=$2 srv=$3 port=$4 op bs conns wt out
    read -r op bs conns wt <<<"${CASE_ARGS[$c]}"
    [ "$wt" = 1 ] && return 0  # smbload has no write-through option
    out=$("${PIN[@]}" timeout -k 5 "$TMO" "$BUILD/smbload" --host 127.0.0.1 --port "$port" \
        --share data --user alice --password pw --file bench.dat --size "$SIZE" --prepare never \
        --op "$op" --bs "$bs" --workers "$conns" --duration "$DURATION" --ramp "$RAMP" 2>>"$OUT/errors.log" |
        grep '^{' | tail -n 1 || true)
    record "$rep" "$c" "$srv" smbload "$out"
}

run_fio() { # rep case
    local rep=$1 c=$2 op bs conns wt rw out extra=()
    read -r op bs conns wt <<<"${CASE_ARGS[$c]}"
    rw=$op
    [ "$op" = seqread ] && rw="read"
    [ "$op" = seqwrite ] && rw="write"
    [ "$wt" = 1 ] && extra=(--fdatasync=1)
    out=$("${PIN[@]}" fio --name="$c" --filename="$DAX_SHARE/bench.dat" --rw="$rw" --bs="$bs" --size="$SIZE" \
        --numjobs="$conns" --iodepth=1 --ioengine=psync --direct=0 --invalidate=0 --time_based \
        --runtime="$DURATION" --ramp_time="$RAMP" --group_reporting --randrepeat=0 --norandommap \
        "${extra[@]}" --output-format=json 2>>"$OUT/errors.log" |
        /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
r, w = j["read"], j["write"]
iops = r["iops"] + w["iops"]
bw = (r["bw_bytes"] + w["bw_bytes"]) / 1048576
side = r if r["iops"] >= w["iops"] else w
print(json.dumps({"iops": iops, "mib_s": bw, "lat_us": {"mean": side["clat_ns"]["mean"] / 1000}, "errors": j["error"]}))' || true)
    record "$rep" "$c" local fio "$out"
}

run_iperf() { # rep
    local rep=$1 port out sp
    port=$(free_port)
    "${PIN[@]}" iperf3 -s -B 127.0.0.1 -p "$port" -1 >/dev/null 2>&1 &
    sp=$!
    wait_listen "$port" "$sp" || true
    out=$("${PIN[@]}" iperf3 -c 127.0.0.1 -p "$port" -t "$DURATION" -J 2>>"$OUT/errors.log" |
        /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
print(json.dumps({"mib_s": j["end"]["sum_received"]["bits_per_second"] / 8 / 1048576}))' || true)
    kill "$sp" 2>/dev/null || true
    wait "$sp" 2>/dev/null || true
    record "$rep" net iperf3 iperf3 "$out"
}

{
    echo "date: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -1), kernel $(uname -r), $(free -g | awk '/Mem:/{print $2}') GiB"
    echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "daxsmbd $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'); $(smbd -V); fio $(fio --version); $(iperf3 --version | head -1)"
    echo "REPEATS=$REPEATS DURATION=$DURATION RAMP=$RAMP SIZE=$SIZE CASES=$CASES PIN_CPU=${PIN_CPU:-none} LOAD_THREADS=$LOAD_THREADS"
} >"$OUT/env.txt"

for rep in $(seq 1 "$REPEATS"); do
    log "repetition $rep/$REPEATS"
    for c in "${CASE_LIST[@]}"; do
        read -r op _ <<<"${CASE_ARGS[$c]}"
        # Servers alternate which goes first, so that a slow phase of the machine hits both.
        order=(dax samba)
        [ $((rep % 2)) = 0 ] && order=(samba dax)
        for srv in "${order[@]}"; do
            if [ "$srv" = dax ]; then file=$DAX_SHARE/bench.dat; else file=$PEER_DIR/share/bench.dat; fi
            [[ $op == *read ]] && warm "$file"
            if [ "$srv" = dax ]; then run_load "$rep" "$c" daxsmbd "$DAX_PORT" "$DAX_PID" 0
            else run_load "$rep" "$c" samba "$SAMBA_PORT" "$SAMBA_PID" 1; fi
            [[ $op == *write ]] && sync
            if [ "$SMBLOAD" = 1 ]; then
                [[ $op == *read ]] && warm "$file"
                if [ "$srv" = dax ]; then run_smbload "$rep" "$c" daxsmbd "$DAX_PORT"
                else run_smbload "$rep" "$c" samba "$SAMBA_PORT"; fi
                [[ $op == *write ]] && sync
            fi
        done
        log "  $c done"
        if [ "$LIMITS" = 1 ]; then
            [[ $op == *read ]] && warm "$DAX_SHARE/bench.dat"
            run_fio "$rep" "$c"
            [[ $op == *write ]] && sync
        fi
    done
    [ "$LIMITS" = 1 ] && run_iperf "$rep"
done

kill -0 "$DAX_PID" 2>/dev/null || die "daxsmbd died during the run (log: $BENCH_DIR/dax/daxsmbd.log)"

echo "load average at end: $(cut -d" " -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
/usr/bin/python3 "$ROOT/tests/bench/compare_table.py" "$RAW" "$OUT/env.txt" "$CASES" | tee "$OUT/table.md"
log "raw results: $RAW; table: $OUT/table.md"
