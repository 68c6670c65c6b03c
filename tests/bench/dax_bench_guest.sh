#!/bin/bash
# Guest half of tests/bench/dax_bench.sh.
set -u
. "${VMRUN_HOST:-/host}/guest_common.sh"
SECS=$(cat "$H/seconds")
LOAD=$H/bin/daxsmbd-load

pmem_mount ext4 /mnt/pmem
mkdir -p /mnt/pmem/share && chmod 777 /mnt/pmem/share

conf() { # DAX FLUSH
    printf '[global]\nsmb ports = %s\ninterfaces = 127.0.0.1\nuser database = /tmp/users.db\nlog level = 0\n[b]\npath = /mnt/pmem/share\nread only = no\ndax = %s\ndax flush = %s\n' "$PORT" "$1" "$2"
}
# run TAG daxsmbd-load-args...: output (with its JSON line) in $H/TAG.out
run() {
    local tag=$1
    shift
    "$LOAD" --port "$PORT" --share b --user "$USER_NAME" --password "$USER_PASS" \
        --duration "$SECS" --ramp 1 --server-pid "$SPID" --quiet "$@" >"$H/$tag.out" 2>&1 ||
        echo "   $tag failed: $(tail -1 "$H/$tag.out")"
    echo "   $tag: $(grep -o '"iops":[0-9.]*' "$H/$tag.out") $(grep -o '"mean":[0-9.]*' "$H/$tag.out")"
}
R4K=(--bs 4k --size 64m --file r4k.dat)
SEQ=(--bs 1m --size 256m --file seq.dat)

for mode in on off; do
    echo "== dax = $mode"
    server_start "bench-$mode" "$(conf "$mode" auto)" || exit 1
    # The files are written once (the first mode's runs prepare them) and reused.
    run "$mode-wt-qd1" --op randwrite --write-through --conns 1 "${R4K[@]}"
    run "$mode-wt-8" --op randwrite --write-through --conns 8 "${R4K[@]}"
    run "$mode-rd-qd1" --op randread --conns 1 "${R4K[@]}"
    run "$mode-rd-8" --op randread --conns 8 "${R4K[@]}"
    run "$mode-seqw" --op seqwrite --conns 1 "${SEQ[@]}"
    run "$mode-seqr" --op seqread --conns 1 "${SEQ[@]}"
    echo "   $(dax_stat reads >/dev/null; grep -o 'dax: .*' "$SLOG" | tail -1)"
    server_stop
done

for k in clwb clflushopt clflush ntstore; do
    if server_start "flush-$k" "$(conf on "$k")"; then
        run "flush-$k" --op randwrite --write-through --conns 1 "${R4K[@]}"
        server_stop
    else
        echo "   dax flush = $k: not available on this CPU"
    fi
done
exit 0
