#!/bin/bash
# SMB Direct vs TCP, daxsmbd vs ksmbd, in one boot of the VM guest (tests/vm/run-in-vm.sh;
# soft-RoCE, an emulated CPU: the ratios mean something, the absolute figures little). fio on
# the kernel client's mount (cache=none, psync, queue depth 1; tests/bench/rdma_vm_guest.sh):
#   4K random read latency, 64 KiB and 1 MiB sequential read and write throughput,
#   server CPU per I/O (daxsmbd: utime+stime of the process; ksmbd: of its connection threads,
#   without its workqueue's kworkers, so an underestimate),
# for daxsmbd over SMB Direct, daxsmbd over TCP, ksmbd over SMB Direct and over TCP, and
# daxsmbd's DAX share over SMB Direct (its "RDMA into pmem" mode named) and a second DAX share
# with BENCH_DAX_BOUNCE_OPT (default "rdma into pmem = bounce"; empty: none), for bounce vs
# direct on the trixie guest. A daxsmbd without SMB Direct gets its TCP rows only.
# Prints a Markdown table of the means over the repetitions and of the ratios (also written to
# $OUT, default <build>/rdma-vm-bench.md).
#
#   tests/bench/rdma-vm.sh   (as root; BENCH_SECONDS=5 per fio run, BENCH_REPS=2,
#                             BENCH_FILE_MB=32, STEP_TIMEOUT=60 per mount; about 10-15
#                             minutes under TCG)
#   GUEST=trixie tests/bench/rdma-vm.sh   (Debian 13's 7.x kernel: rxe with ODP, direct mode)
set -euo pipefail
export VM_NAME=rdma_bench
. "$(dirname "$0")/../vm/lib.sh"
OUT=${OUT:-$DAXSMBD_BUILD/rdma-vm-bench.md}

vm_ensure_image
vm_ensure_binaries
STAGE=$(mktemp -d /tmp/daxsmbd-rdmabench.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$STAGE"' EXIT
vm_stage "$STAGE"
cp "$VM_ROOT/tests/bench/rdma_vm_guest.sh" "$STAGE/"
{
    printf 'BENCH_SECONDS=%q\nBENCH_REPS=%q\n' "${BENCH_SECONDS:-5}" "${BENCH_REPS:-2}"
    printf 'BENCH_FILE_MB=%q\nBENCH_DAX_BOUNCE_OPT=%q\n' "${BENCH_FILE_MB:-32}" "${BENCH_DAX_BOUNCE_OPT-rdma into pmem = bounce}"
    printf 'STEP_TIMEOUT=%q\n' "${STEP_TIMEOUT:-60}"
} >"$STAGE/bench.env"
VM_TIMEOUT=${VM_TIMEOUT:-1800} vm_run "$STAGE/rdma_vm_guest.sh" "$STAGE"

/usr/bin/python3 - "$STAGE/bench" "$(cat "$VMCACHE/${GUEST:-bookworm}-guest/image/kernel-version" 2>/dev/null)" >"$OUT" <<'PY'
import json, os, re, sys
d, kver = sys.argv[1], sys.argv[2]
JOBS = [("r4k", "4K rand read QD1", "lat"), ("sr64k", "64K seq read", "bw"),
        ("sw64k", "64K seq write", "bw"), ("sr1m", "1M seq read", "bw"), ("sw1m", "1M seq write", "bw")]
runs = {}  # (tag, job) -> [(lat_us, MB/s, ios, cpu_us_per_io)]
for name in sorted(os.listdir(d)):
    m = re.fullmatch(r"(.+)\.([a-z0-9]+)\.(\d+)\.json", name)
    if not m:
        continue
    tag, job, rep = m.groups()
    try:
        r = json.load(open(os.path.join(d, name)))["jobs"][0]
    except (ValueError, KeyError, IndexError):
        continue
    side = r["read"] if r["read"]["io_bytes"] else r["write"]
    ios = side["total_ios"]
    if not ios:
        continue
    cpu = None
    try:
        ticks, hz = open(os.path.join(d, "%s.%s.%s.cpu" % (tag, job, rep))).read().split()
        cpu = int(ticks) / int(hz) * 1e6 / ios
    except (OSError, ValueError):
        pass
    runs.setdefault((tag, job), []).append(
        (side["lat_ns"]["mean"] / 1000, side["bw_bytes"] / 1e6, ios, cpu))

def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None

def fig(tag, job, i):
    return mean([r[i] for r in runs.get((tag, job), [])])

order = ["dx-rdma", "dx-tcp", "ks-rdma", "ks-tcp"]
tags = sorted({t for t, _ in runs}, key=lambda t: (order.index(t) if t in order else 9, t))
print("# SMB Direct in the VM guest (kernel %s), fio on the kernel client, cache=none, QD1\n" % (kver or "?"))
print("Means over %d repetition(s). Latency: mean completion latency; CPU: server CPU time per I/O."
      % max([len(v) for v in runs.values()] or [0]))
print("Emulated CPU and soft-RoCE: compare the ratios, not the absolute figures.\n")
print("| target | " + " | ".join(
    "%s %s | CPU us/io" % (label, "us" if kind == "lat" else "MB/s") for _, label, kind in JOBS) + " |")
print("|---|" + "---:|---:|" * len(JOBS))
for t in tags:
    cells = []
    for job, _, kind in JOBS:
        v = fig(t, job, 0 if kind == "lat" else 1)
        c = fig(t, job, 3)
        cells.append("%.1f" % v if v is not None else "-")
        cells.append("%.1f" % c if c is not None else "-")
    print("| %s | %s |" % (t, " | ".join(cells)))
ratios = [("dx-rdma", "dx-tcp", "daxsmbd RDMA / TCP"), ("ks-rdma", "ks-tcp", "ksmbd RDMA / TCP"),
          ("dx-rdma", "ks-rdma", "daxsmbd / ksmbd, RDMA"), ("dx-tcp", "ks-tcp", "daxsmbd / ksmbd, TCP")]
for t in tags:
    if t.startswith("dx-rdma-dax"):
        ratios.append((t, "dx-rdma", "%s / block share, RDMA" % t))
if "dx-rdma-daxb" in tags:
    for t in tags:
        if t.startswith("dx-rdma-dax-"):
            ratios.append((t, "dx-rdma-daxb", "%s / forced bounce" % t))
print("\nRatios (latency: lower is better; throughput: higher is better; CPU per I/O: lower is better)\n")
print("| ratio | " + " | ".join("%s | CPU" % label for _, label, _ in JOBS) + " |")
print("|---|" + "---:|---:|" * len(JOBS))
for a, b, label in ratios:
    if a not in tags or b not in tags:
        continue
    cells = []
    for job, _, kind in JOBS:
        i = 0 if kind == "lat" else 1
        va, vb = fig(a, job, i), fig(b, job, i)
        ca, cb = fig(a, job, 3), fig(b, job, 3)
        cells.append("%.2f" % (va / vb) if va and vb else "-")
        cells.append("%.2f" % (ca / cb) if ca and cb else "-")
    print("| %s | %s |" % (label, " | ".join(cells)))
missing = [t for t in order if t not in tags]
if missing:
    print("\nNo figures for: %s (see the guest output above)." % ", ".join(missing))
PY
cat "$OUT"
vlog "written to $OUT"
