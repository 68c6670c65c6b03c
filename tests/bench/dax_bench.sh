#!/bin/bash
# DAX vs block path, in the VM (../shared/vm, software-emulated: report ratios, not absolute
# figures). One boot: ext4 -o dax on the emulated NVDIMM, daxsmbd serving the same directory with
# "dax = on" and then "dax = off", the load generator daxsmbd-load (tests/bench/load_main.cpp)
# in the guest on loopback:
#   4K write-through (SMB2_WRITEFLAG_WRITE_THROUGH) QD1 latency and IOPS with 1 and 8
#   connections, 4K random read QD1 and 8 connections, 1 MiB sequential write and read streams,
#   server CPU per I/O (utime+stime of daxsmbd); then 4K write-through QD1 with each
#   "dax flush" instruction.
# Prints Markdown tables (also written to $OUT, default <build>/dax-bench.md).
#
#   tests/bench/dax_bench.sh        (as root; BENCH_SECONDS=5 measured seconds per run)
set -euo pipefail
export VM_NAME=dax_bench
. "$(dirname "$0")/../vm/lib.sh"
OUT=${OUT:-$DAXSMBD_BUILD/dax-bench.md}

vm_ensure_image
vm_ensure_binaries daxsmbd-load
STAGE=$(mktemp -d /tmp/daxsmbd-bench.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$STAGE"' EXIT
vm_stage "$STAGE" daxsmbd-load
cp "$VM_ROOT/tests/bench/dax_bench_guest.sh" "$STAGE/"
echo "${BENCH_SECONDS:-5}" >"$STAGE/seconds"
VM_TIMEOUT=900 "$SHARED_DIR/vm/run-in-vm.sh" "$STAGE/dax_bench_guest.sh" "$STAGE"

/usr/bin/python3 - "$STAGE" >"$OUT" <<'PY'
import json, os, sys
d = sys.argv[1]
res = {}
for name in os.listdir(d):
    if not name.endswith(".out"):
        continue
    for line in open(os.path.join(d, name)):
        if line.startswith("{"):
            try:
                res[name[:-4]] = json.loads(line)
            except ValueError:
                pass

def get(tag, key):
    r = res.get(tag)
    if not r:
        return None
    return r["lat_us"]["mean"] if key == "lat" else r[key]

def row(label, job, key, unit):
    a, b = get("on-" + job, key), get("off-" + job, key)
    if a is None or b is None:
        return f"| {label} | n/a | n/a | n/a |"
    ratio = a / b if b else float("nan")
    return f"| {label} | {a:.1f} {unit} | {b:.1f} {unit} | {ratio:.2f}x |"

print("| measure (daxsmbd-load in the guest, loopback) | dax = on | dax = off | on/off |")
print("|---|---|---|---|")
print(row("4K write-through QD1 mean latency", "wt-qd1", "lat", "us"))
print(row("4K write-through IOPS, 1 connection QD1", "wt-qd1", "iops", "IOPS"))
print(row("4K write-through IOPS, 8 connections QD1", "wt-8", "iops", "IOPS"))
print(row("4K random read QD1 mean latency", "rd-qd1", "lat", "us"))
print(row("4K random read IOPS, 8 connections QD1", "rd-8", "iops", "IOPS"))
print(row("1 MiB sequential write", "seqw", "mib_s", "MiB/s"))
print(row("1 MiB sequential read", "seqr", "mib_s", "MiB/s"))
print(row("server CPU per 4K write-through (8 conns)", "wt-8", "server_cpu_us_per_io", "us"))
print(row("server CPU per 4K read (8 conns)", "rd-8", "server_cpu_us_per_io", "us"))
print()
print("| dax flush | 4K write-through QD1 mean latency | vs clflush |")
print("|---|---|---|")
base = get("flush-clflush", "lat")
for k in ("clwb", "clflushopt", "clflush", "ntstore"):
    v = get("flush-" + k, "lat")
    if v is None:
        print(f"| {k} | not available | |")
    else:
        print(f"| {k} | {v:.1f} us | {(v / base) if base else float('nan'):.2f}x |")
PY
cat "$OUT"
