#!/usr/bin/python3
"""The table of tests/bench/compare.sh: medians over the repetitions of every measurement in
raw.jsonl (lines {"rep", "case", "server", "tool", "r": <the tool's JSON>}).

  compare_table.py RAW.jsonl ENV.txt CASES
"""
import json
import statistics
import sys

NAMES = {
    "rr1": "4K randread QD1",
    "rr8": "4K randread 8 workers",
    "rw1": "4K randwrite QD1",
    "rw8": "4K randwrite 8 workers",
    "rwt": "4K randwrite write-through",
    "sr": "1 MiB seqread",
    "sw": "1 MiB seqwrite",
}
QD1 = {"rr1", "rw1", "rwt"}


def load(path):
    out = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        try:
            m = json.loads(line)
        except json.JSONDecodeError:
            continue
        out.setdefault((m["case"], m["server"], m["tool"]), []).append(m["r"])
    return out


def get(r, path):
    for k in path.split("."):
        if not isinstance(r, dict) or k not in r:
            return None
        r = r[k]
    return r


def median(runs, path):
    """(median, n, errors) of a field over the runs that have it; runs with errors are kept but
    counted, so a failing server shows up in the table instead of disappearing."""
    vals = [get(r, path) for r in runs]
    vals = [v for v in vals if isinstance(v, (int, float)) and v >= 0]
    errs = sum(1 for r in runs if (get(r, "errors") or 0) > 0 or get(r, "error") not in (None, ""))
    if not vals:
        return None, 0, errs
    return statistics.median(vals), len(vals), errs


def fmt(v, digits=0):
    if v is None:
        return "-"
    if digits == 0 and abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:,.{max(digits, 1) if abs(v) < 100 else 0}f}"


def cell(data, key, path, digits=0):
    runs = data.get(key, [])
    v, n, errs = median(runs, path)
    s = fmt(v, digits)
    if errs:
        s += f" ({errs} err)"
    return s, v


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}"


def main():
    data = load(sys.argv[1])
    env = open(sys.argv[2]).read().strip().splitlines() if len(sys.argv) > 2 else []
    cases = sys.argv[3].split(",") if len(sys.argv) > 3 else list(NAMES)
    net, _, _ = median(data.get(("net", "iperf3", "iperf3"), []), "mib_s")
    print("## daxsmbd vs Samba (medians)\n")
    for e in env:
        print(f"    {e}")
    print()
    print("| case | metric | daxsmbd (daxsmbd-load) | Samba (daxsmbd-load) | ratio | daxsmbd (smbload) "
          "| Samba (smbload) | ratio | limit (fio local / iperf3) | server CPU µs/IO daxsmbd | Samba | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in cases:
        name = NAMES.get(c, c)
        big = c in ("sr", "sw")
        path = "mib_s" if big else "iops"
        metric = "MiB/s" if big else "IOPS"
        dl, dlv = cell(data, (c, "daxsmbd", "load"), path)
        sl, slv = cell(data, (c, "samba", "load"), path)
        ds, dsv = cell(data, (c, "daxsmbd", "smbload"), path)
        ss, ssv = cell(data, (c, "samba", "smbload"), path)
        fio, _ = cell(data, (c, "local", "fio"), path)
        limit = fio
        if big:
            limit = f"{fio} / {fmt(net)}"
            if dlv is not None and net:
                limit += f" (daxsmbd {100 * dlv / net:.0f}% of iperf3)"
        dc, dcv = cell(data, (c, "daxsmbd", "load"), "server_cpu_us_per_io", 1)
        sc, scv = cell(data, (c, "samba", "load"), "server_cpu_us_per_io", 1)
        print(f"| {name} | {metric} | {dl} | {sl} | {ratio(dlv, slv)} | {ds} | {ss} | "
              f"{ratio(dsv, ssv)} | {limit} | {dc} | {sc} | {ratio(dcv, scv)} |")
        if c in QD1:
            p = "lat_us.mean"
            dl, dlv = cell(data, (c, "daxsmbd", "load"), p, 1)
            sl, slv = cell(data, (c, "samba", "load"), p, 1)
            ds, dsv = cell(data, (c, "daxsmbd", "smbload"), p, 1)
            ss, ssv = cell(data, (c, "samba", "smbload"), p, 1)
            fio, _ = cell(data, (c, "local", "fio"), p, 1)
            print(f"| {name} | mean latency µs | {dl} | {sl} | {ratio(dlv, slv)} | {ds} | {ss} | "
                  f"{ratio(dsv, ssv)} | {fio} | | | |")
            p = "lat_us.p99"
            dl, dlv = cell(data, (c, "daxsmbd", "load"), p, 1)
            sl, slv = cell(data, (c, "samba", "load"), p, 1)
            ds, dsv = cell(data, (c, "daxsmbd", "smbload"), p, 1)
            ss, ssv = cell(data, (c, "samba", "smbload"), p, 1)
            print(f"| {name} | p99 latency µs | {dl} | {sl} | {ratio(dlv, slv)} | {ds} | {ss} | "
                  f"{ratio(dsv, ssv)} | | | | |")
    print()
    print("ratio = daxsmbd / Samba (throughput: higher is better for daxsmbd; latency and CPU: "
          "lower is better). Server CPU = utime+stime of the server process(es) in the measured "
          "window (Samba: the main smbd and all its children) per I/O, from daxsmbd-load's runs. "
          "smbload has no write-through option ('-').")


if __name__ == "__main__":
    main()
