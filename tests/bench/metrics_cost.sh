#!/bin/bash
# What the metrics cost the request path (README "Metrics"): two daxsmbd on the same share, one
# with "metrics address" off (the request path skips the counters) and one with it on and
# scraped every second, measured in turns with build/daxsmbd-load on the 4K cases. Prints, per
# case, the medians of server CPU µs per I/O and IOPS of both, and their ratios (on / off).
# Not part of the test command: benchmarks are not timed tests.
#
#   tests/bench/metrics_cost.sh [--duration SEC] [--repeats N] [--cases LIST] [--out DIR]
#
#   defaults --duration 5 --repeats 5 --cases rr1,rw1,rr8; the cases as in compare.sh.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
DURATION=5 REPEATS=5 CASES=rr1,rw1,rr8 OUT='' SIZE=256m
while [ $# -gt 0 ]; do
    case $1 in
        --duration) DURATION=$2; shift ;;
        --repeats) REPEATS=$2; shift ;;
        --cases) CASES=$2; shift ;;
        --out) OUT=$2; shift ;;
        -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "metrics_cost.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

bench_init metrics_cost
OUT=${OUT:-/tmp/daxsmbd-metrics-cost-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
RAW=$OUT/raw.jsonl
: >"$RAW"
bench_shares "$(size_bytes "$SIZE")"

# Two servers on the same share: "off", then "on" with its endpoint on a port of its own.
BENCH_DAX_GLOBAL="    control socket ="
bench_start_daxsmbd
OFF_PORT=$DAX_PORT OFF_PID=$DAX_PID
METRICS_PORT=$(free_port)
BENCH_DAX_GLOBAL="    control socket =
    metrics address = 127.0.0.1:$METRICS_PORT"
bench_start_daxsmbd
ON_PORT=$DAX_PORT ON_PID=$DAX_PID
DAX_PID=$OFF_PID # bench_cleanup stops this one; cleanup the other and the scraper
SCRAPER=
cleanup() {
    local rc=$?
    kill "$ON_PID" ${SCRAPER:+"$SCRAPER"} 2>/dev/null || true
    (exit "$rc") || bench_cleanup # bench_cleanup exits with the status it finds
    bench_cleanup
}
trap cleanup EXIT

# A scraper as Prometheus would be, but every second (Prometheus' default is 15 s).
(while sleep 1; do curl -s "http://127.0.0.1:$METRICS_PORT/metrics" >/dev/null || true; done) &
SCRAPER=$!

declare -A CASE_ARGS=([rr1]="randread 4k 1" [rw1]="randwrite 4k 1" [rr8]="randread 4k 8")
IFS=, read -r -a CASE_LIST <<<"$CASES"
TMO=$((DURATION + 120))
measure() { # rep case server port pid
    local op bs conns out
    read -r op bs conns <<<"${CASE_ARGS[$2]}"
    out=$(timeout -k 5 "$TMO" "$BUILD/daxsmbd-load" --host 127.0.0.1 --port "$4" --share data \
        --user alice --password pw --file bench.dat --size "$SIZE" --prepare never --op "$op" \
        --bs "$bs" --conns "$conns" --qd 1 --threads 2 --duration "$DURATION" --ramp 1 \
        --server-pid "$5" --label "$2/$3" --quiet 2>>"$OUT/errors.log" | grep '^{' | tail -n 1 || true)
    printf '{"rep":%s,"case":"%s","server":"%s","r":%s}\n' "$1" "$2" "$3" "${out:-{\}}" >>"$RAW"
}
for rep in $(seq 1 "$REPEATS"); do
    for c in "${CASE_LIST[@]}"; do
        # Alternate which goes first, so that drift of the machine falls on both.
        if [ $((rep % 2)) = 1 ]; then
            measure "$rep" "$c" off "$OFF_PORT" "$OFF_PID"
            measure "$rep" "$c" on "$ON_PORT" "$ON_PID"
        else
            measure "$rep" "$c" on "$ON_PORT" "$ON_PID"
            measure "$rep" "$c" off "$OFF_PORT" "$OFF_PID"
        fi
        log "rep $rep $c done"
    done
done
curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | grep -c '^daxsmbd_' >"$OUT/scrape-lines.txt" || true

python3 - "$RAW" <<'PY' | tee "$OUT/table.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
names = {"rr1": "4K randread QD1", "rw1": "4K randwrite QD1", "rr8": "4K randread 8 workers"}
print("| case | CPU µs/IO off | on | ratio | IOPS off | on | ratio | runs |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for case in dict.fromkeys(r["case"] for r in rows):
    def med(server, key):
        v = [r["r"][key] for r in rows if r["case"] == case and r["server"] == server
             and key in r["r"] and not r["r"].get("errors")]
        return statistics.median(v) if v else float("nan"), len(v)
    c0, n0 = med("off", "server_cpu_us_per_io")
    c1, _ = med("on", "server_cpu_us_per_io")
    i0, _ = med("off", "iops")
    i1, _ = med("on", "iops")
    print(f"| {names.get(case, case)} | {c0:.1f} | {c1:.1f} | {c1 / c0:.2f} | {i0:,.0f} | {i1:,.0f} | {i1 / i0:.2f} | {n0} |")
PY
log "results in $OUT"
