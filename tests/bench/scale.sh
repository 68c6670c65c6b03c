#!/bin/bash
# Idle-connection scaling of daxsmbd and Samba (not part of the test command).
#
# For each count N: build/daxsmbd-load --scale N against the server. The load generator first
# measures a probe connection (4 KiB random reads, QD1) on the otherwise idle server, then opens
# N connections (negotiate SMB 3.1.1, NTLMv2 session, tree connect, open of the test file) and
# holds them idle while the probe measures again. Reported per N: the server's RSS and PSS
# (VmRSS / smaps_rollup Pss, summed over all smbd processes for Samba), per idle connection,
# descriptors, threads, processes, and the probe's latency with/without the idle connections.
#
#   tests/bench/scale.sh [--counts "100 1000 4000 5000"] [--samba-counts "100 500"]
#                        [--duration SEC] [--keep] [--out DIR]
#
# The idle connections come from 127.0.1.x source addresses, 1000 per address
# (--conns-per-source), so that daxsmbd's limit of 1024 connections per client address is not
# what is measured; its total limit (`max connections total`, default 4096) is raised to the
# largest count plus the probe connections.
#
# Results (OUT, default /tmp/daxsmbd-scale-DATE): raw.jsonl, table.md.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
COUNTS="100 1000 4000 5000" SAMBA_COUNTS="100 500" DURATION=5 OUT=""
while [ $# -gt 0 ]; do
    case $1 in
        --counts) COUNTS=$2; shift ;;
        --samba-counts) SAMBA_COUNTS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --keep) KEEP=1 ;;
        --out) OUT=$2; shift ;;
        -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "scale.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

bench_init scale
OUT=${OUT:-/tmp/daxsmbd-scale-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
RAW=$OUT/raw.jsonl
: >"$RAW"
# Every connection holds a socket and an open file in the server, and the client holds a
# socket per connection: raise our own descriptor limit (the servers inherit it).
max=0
for n in $COUNTS $SAMBA_COUNTS; do [ "$n" -gt "$max" ] && max=$n; done
want=$((2 * max + 1024))
hard=$(ulimit -Hn)
[ "$hard" != unlimited ] && [ "$hard" -lt "$want" ] && log "warning: hard RLIMIT_NOFILE $hard < $want needed for $max connections"
ulimit -n "$([ "$hard" = unlimited ] || [ "$hard" -ge "$want" ] && echo "$want" || echo "$hard")"
bench_shares $((16 << 20))

run_scale() { # server port pid tree N
    local srv=$1 port=$2 pid=$3 tree=$4 n=$5 out args
    args=(--host 127.0.0.1 --port "$port" --share data --user alice --password pw --file bench.dat
        --size 16m --prepare never --scale "$n" --duration "$DURATION" --ramp 1 --server-pid "$pid"
        --setup-threads 4 --conns-per-source 1000 --label "$srv/$n")
    [ "$tree" = 1 ] && args+=(--server-tree)
    log "$srv: $n idle connections"
    out=$(timeout -k 5 $((600 + n / 10)) "$BUILD/daxsmbd-load" "${args[@]}" 2>>"$OUT/errors.log" || true)
    printf '%s\n' "$out" | grep -v '^{' >&2 || true
    out=$(grep '^{' <<<"$out" | tail -n 1 || true)
    [ -n "$out" ] || out='{"error":"no output"}'
    printf '{"server":"%s","n":%s,"r":%s}\n' "$srv" "$n" "$out" >>"$RAW"
}

# daxsmbd: `smb2 max credits` and `deadtime` are per connection and the defaults suffice; the
# total connection limit must admit the largest count and the probe.
max_count=0
for n in $COUNTS; do [ "$n" -gt "$max_count" ] && max_count=$n; done
export BENCH_DAX_GLOBAL="    max connections total = $((max_count + 64))"
# A fresh server for every count: memory a previous run freed would hide new allocations.
for n in $COUNTS; do
    bench_start_daxsmbd
    run_scale daxsmbd "$DAX_PORT" "$DAX_PID" 0 "$n"
    bench_stop_daxsmbd
done
for n in $SAMBA_COUNTS; do
    bench_start_samba
    run_scale samba "$SAMBA_PORT" "$SAMBA_PID" 1 "$n"
    bench_stop_samba
done

{
    echo "date: $(date -u +%FT%TZ); machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -1), kernel $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| server | idle conns | opened / alive | RSS before → after MiB | RSS per conn KiB | PSS per conn KiB | fds | threads | processes | probe mean µs idle → loaded | ratio | probe p99 µs idle → loaded | ratio |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    /usr/bin/python3 - "$RAW" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    r = m["r"]
    if "before" not in r:
        print(f"| {m['server']} | {m['n']} | failed: {r.get('error', '?')} | | | | | | | | | | |")
        continue
    b, a = r["before"], r["after"]
    pi, pl = r["probe_idle"]["lat_us"], r["probe_loaded"]["lat_us"]
    note = ""
    if r["opened"] < m["n"] or r.get("error"):
        note = f" ({r.get('error', '')[:60]})"
    if r["probe_loaded"]["ops"] == 0:
        print(f"| {m['server']} | {m['n']:,} | {r['opened']:,} / {r['alive']:,}{note} | "
              f"{b['rss_kib']/1024:,.1f} → {a['rss_kib']/1024:,.1f} | {r['rss_kib_per_conn']:,.1f} | "
              f"{r['pss_kib_per_conn']:,.1f} | {b['fds']:,} → {a['fds']:,} | {b['threads']} → {a['threads']} | "
              f"{b['processes']} → {a['processes']} | {pi['mean']:,.0f} → (probe refused) | - | - | - |")
        continue
    print(f"| {m['server']} | {m['n']:,} | {r['opened']:,} / {r['alive']:,}{note} | "
          f"{b['rss_kib']/1024:,.1f} → {a['rss_kib']/1024:,.1f} | {r['rss_kib_per_conn']:,.1f} | "
          f"{r['pss_kib_per_conn']:,.1f} | {b['fds']:,} → {a['fds']:,} | {b['threads']} → {a['threads']} | "
          f"{b['processes']} → {a['processes']} | {pi['mean']:,.0f} → {pl['mean']:,.0f} | "
          f"{r['probe_mean_ratio']:.2f} | {pi['p99']:,.0f} → {pl['p99']:,.0f} | {r['probe_p99_ratio']:.2f} |")
PY
} | tee "$OUT/table.md"
log "raw results: $RAW; table: $OUT/table.md"
