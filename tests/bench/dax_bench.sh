#!/bin/bash
# DAX vs block path, in the VM (tests/vm/run-in-vm.sh; an emulated NVDIMM, often an emulated
# CPU: report ratios, not absolute figures). One boot: ext4 -o dax on the emulated NVDIMM,
# daxsmbd serving the same directory with "dax = on" and with "dax = off" (and "dax = on" with each "dax flush"
# instruction the CPU has), the load generator daxsmbd-load (tests/bench/load_main.cpp) in the
# guest on loopback:
#   4K write-through (SMB2_WRITEFLAG_WRITE_THROUGH) QD1 latency and IOPS with 1 and 8
#   connections, 4K random read QD1 and 8 connections, 1 MiB sequential write and read streams,
#   server CPU per I/O (utime+stime of daxsmbd); then 4K write-through QD1 with each
#   "dax flush" instruction.
# The runs are interleaved and repeated (tests/bench/dax_bench_guest.sh says why); each ratio is
# the mean of the per-repetition ratios, with their range.
# Prints Markdown tables (also written to $OUT, default <build>/dax-bench.md).
#
#   tests/bench/dax_bench.sh   (as root; BENCH_SECONDS=4 measured seconds per run, BENCH_REPS=2;
#                               about 6-8 minutes on a 2-core host shared with builds)
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
echo "${BENCH_SECONDS:-4}" >"$STAGE/seconds"
echo "${BENCH_REPS:-2}" >"$STAGE/reps"
[ -z "${BENCH_JOBS:-}" ] || cp "$BENCH_JOBS" "$STAGE/jobs"
VM_TIMEOUT=900 vm_run "$STAGE/dax_bench_guest.sh" "$STAGE"

/usr/bin/python3 - "$STAGE" >"$OUT" <<'PY'
import json, os, re, sys
d = sys.argv[1]
res = {}  # tag -> {rep: json}
for name in os.listdir(d):
    m = re.fullmatch(r"(.+)\.(\d+)\.out", name)
    if not m:
        continue
    for line in open(os.path.join(d, name)):
        if line.startswith("{"):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("ops"):
                res.setdefault(m.group(1), {})[int(m.group(2))] = r

def val(r, key):
    return r["lat_us"]["mean"] if key == "lat" else r[key]

def mean(xs):
    return sum(xs) / len(xs)

def compare(a_tag, b_tag, key):
    """(mean of a, mean of b, mean of per-rep a/b, min, max) over the reps both have."""
    a, b = res.get(a_tag, {}), res.get(b_tag, {})
    reps = sorted(set(a) & set(b))
    if not reps:
        return None
    av = [val(a[i], key) for i in reps]
    bv = [val(b[i], key) for i in reps]
    ratios = [x / y for x, y in zip(av, bv) if y]
    return mean(av), mean(bv), mean(ratios), min(ratios), max(ratios), len(reps)

def row(label, job, key, unit):
    c = compare("on-" + job, "off-" + job, key)
    if not c:
        return f"| {label} | n/a | n/a | n/a |"
    a, b, r, lo, hi, n = c
    return f"| {label} | {a:.0f} {unit} | {b:.0f} {unit} | **{r:.2f}x** ({lo:.2f}-{hi:.2f}) |"

print("| measure (daxsmbd-load in the guest, loopback) | dax = on | dax = off | on/off (range) |")
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
print("| dax flush | 4K write-through QD1 mean latency | vs clflush (range) |")
print("|---|---|---|")
for k in ("clwb", "clflushopt", "clflush", "ntstore"):
    c = compare("flush-" + k, "flush-clflush", "lat")
    if not c:
        print(f"| {k} | not available | |")
    else:
        a, b, r, lo, hi, n = c
        print(f"| {k} | {a:.0f} us | {r:.2f}x ({lo:.2f}-{hi:.2f}) |")
reps = max((len(v) for v in res.values()), default=0)
print()
print(f"({reps} interleaved repetitions per measure; ratio = mean of the per-repetition ratios.)")
PY
cat "$OUT"
