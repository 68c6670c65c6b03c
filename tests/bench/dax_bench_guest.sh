#!/bin/bash
# Guest half of tests/bench/dax_bench.sh.
#
# Every server runs at once on its own port, serving the same directory of one ext4 -o dax file
# system: "dax = on" (auto flush), "dax = off", and one "dax = on" per "dax flush" instruction the
# CPU has. The runs are interleaved (each measure: on, off, or off, on; then the flush kinds in a
# rotating order) and repeated $REPS times, because on a host shared with other work the speed of
# the emulated guest drifts by 2x within minutes: runs far apart in time do not compare.
set -u
. "${VMRUN_HOST:-/host}/guest_common.sh"
SECS=$(cat "$H/seconds")
REPS=$(cat "$H/reps")
LOAD=$H/bin/daxsmbd-load
T0=$(date +%s)
elapsed() { echo "$(($(date +%s) - T0))s"; }

pmem_mount ext4 /mnt/pmem
mkdir -p /mnt/pmem/share && chmod 777 /mnt/pmem/share
echo "guest CPU flags: $(grep -o -w -E 'clwb|clflushopt|clflush' /proc/cpuinfo | sort -u | tr '\n' ' ')"

declare -A SPIDS PORTS
# start NAME PORT DAX FLUSH: a daxsmbd in the background; false when it does not start (a flush
# instruction the CPU lacks stops it).
start() {
    local name=$1 port=$2 log=$H/daxsmbd-$1.log
    printf '[global]\nsmb ports = %s\ninterfaces = 127.0.0.1\nuser database = /tmp/users.db\nlog level = 1\n[b]\npath = /mnt/pmem/share\nread only = no\ndax = %s\ndax flush = %s\n' \
        "$port" "$3" "$4" >"/tmp/$name.conf"
    [ -f /tmp/users.db ] || add_smb_user "/tmp/$name.conf"
    "$DAXSMBD" -s "/tmp/$name.conf" -F >"$log" 2>&1 &
    local pid=$!
    for _ in $(seq 150); do
        if ss -ltnH "sport = :$port" | grep -q .; then
            SPIDS[$name]=$pid
            PORTS[$name]=$port
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    echo "   $name: not started: $(grep -m1 -E 'ERROR|error' "$log")"
    return 1
}
# run SERVER TAG REP daxsmbd-load-args...: output (with its JSON line) in $H/TAG.REP.out
# Each server works on its own copies of the files (same file system): a server writing a file
# changes its mtime, which makes the other server's cached mapping of it stale (by design: the
# map cache drops maps of files changed behind its back), and the measure would then only ever
# see cold mappings.
run() {
    local server=$1 tag=$2 rep=$3
    shift 3
    local a args=() prefix=${server%%-*}
    for a in "$@"; do
        case $a in *.dat) a="$prefix-$a" ;; esac
        args+=("$a")
    done
    set -- "${args[@]}"
    "$LOAD" --port "${PORTS[$server]}" --share b --user "$USER_NAME" --password "$USER_PASS" \
        --duration "$SECS" --ramp 1 --server-pid "${SPIDS[$server]}" --quiet "$@" \
        >"$H/$tag.$rep.out" 2>&1 || echo "   $tag failed: $(tail -1 "$H/$tag.$rep.out")"
    echo "   [$(elapsed)] $tag #$rep: $(grep -o '"iops":[0-9.]*' "$H/$tag.$rep.out") $(grep -o '"mean":[0-9.]*' "$H/$tag.$rep.out")"
}

R4K=(--bs 4k --size 32m --file r4k.dat)
SEQ=(--bs 1m --size 64m --file seq.dat)
JOBS=(
    "wt-qd1 --op randwrite --write-through --conns 1 ${R4K[*]}"
    "wt-8 --op randwrite --write-through --conns 8 ${R4K[*]}"
    "rd-qd1 --op randread --conns 1 ${R4K[*]}"
    "rd-8 --op randread --conns 8 ${R4K[*]}"
    "seqw --op seqwrite --conns 1 ${SEQ[*]}"
    "seqr --op seqread --conns 1 ${SEQ[*]}"
)

# $H/jobs (optional, for experiments): other jobs, one "TAG daxsmbd-load-args..." per line; with
# it the flush comparison is skipped.
if [ -s "$H/jobs" ]; then mapfile -t JOBS <"$H/jobs"; fi

start on 10445 on auto || exit 1
start off 10446 off auto || exit 1
FLUSHES=()
port=10447
for k in clwb clflushopt clflush ntstore; do
    [ -s "$H/jobs" ] && break
    start "flush-$k" "$port" on "$k" && FLUSHES+=("$k")
    port=$((port + 1))
done
grep -h 'DAX active\|not a DAX\|dax = off' "$H"/daxsmbd-on.log "$H"/daxsmbd-off.log | sed 's/^/   /'

# The files are written once, through the block path, and then reused by every run.
for prefix in on off flush; do
    for f in "${R4K[*]}" "${SEQ[*]}" "--size 4m --file small.dat"; do
        # shellcheck disable=SC2086
        "$LOAD" --port "${PORTS[off]}" --share b --user "$USER_NAME" --password "$USER_PASS" \
            --prepare only ${f/--file /--file $prefix-} >/dev/null || exit 1
    done
done
echo "   [$(elapsed)] files prepared"

for rep in $(seq "$REPS"); do
    order="on off"
    [ $((rep % 2)) = 0 ] && order="off on"
    for job in "${JOBS[@]}"; do
        read -r -a args <<<"$job"
        for mode in $order; do
            run "$mode" "$mode-${args[0]}" "$rep" "${args[@]:1}"
        done
    done
    n=${#FLUSHES[@]}
    for i in $(seq 0 $((n - 1))); do
        k=${FLUSHES[$(((i + rep) % n))]}
        run "flush-$k" "flush-$k" "$rep" --op randwrite --write-through --conns 1 "${R4K[@]}"
    done
done
for s in on off; do
    kill -USR1 "${SPIDS[$s]}"
done
sleep 1
for s in on off; do
    echo "   $s: $(grep -o 'dax: .*' "$H/daxsmbd-$s.log" | tail -1)"
done
for s in "${!SPIDS[@]}"; do
    kill -TERM "${SPIDS[$s]}" 2>/dev/null
done
wait
echo "   [$(elapsed)] done"
exit 0
