#!/usr/bin/python3
"""Summary of one smbtorture suite run with --format=subunit (subunit v1 text).

  subunit_summary.py SUITE LOG [EXIT_STATUS]

Prints one line per test, "RESULT  name  seconds  first line of the reason", then the totals as
"# SUITE: pass=N fail=N skip=N error=N xfail=N uxpass=N incomplete=N total=N exit=STATUS".
RESULT is PASS FAIL SKIP ERROR XFAIL UXPASS or INCOMPLETE: a test that started but has no
result (smbtorture hung and was killed by its timeout, or crashed). A suite in which no test
ran at all (its setup failed) counts as one ERROR. tests/interop/smbtorture.sh and
tests/peer/smbtorture-baseline.sh read these lines.
"""
import re
import sys
from datetime import datetime

RESULTS = {"success": "PASS", "successful": "PASS", "failure": "FAIL", "fail": "FAIL",
           "error": "ERROR", "skip": "SKIP", "xfail": "XFAIL", "uxsuccess": "UXPASS"}
# smbtorture's own progress output lacks a line end at times, so a subunit line may follow some
# of it on the same line ("...ops\n0time: ..."): results and test starts may have a prefix of
# digits, a time stamp anything before it.
# Test names may contain spaces ("smb2.delete-on-close-perms.CREATE Existing"); a reason follows
# as " [" and lines up to a lone "]", or as " [ text ]" on the same line.
RESULT_LINE = re.compile(r"^\d*(%s)\s*:\s*(.*?)\s*$" % "|".join(RESULTS))
REASON_START = re.compile(r"^(.*?)\s*\[(\s*multipart)?$")
REASON_INLINE = re.compile(r"^(.*?)\s+\[\s*(.*?)\s*\]$")
TIME_LINE = re.compile(r"time: (\d{4}-\d\d-\d\d [\d:.]+Z?)\s*$")
TEST_LINE = re.compile(r"^\d*test: (.*?)\s*$")
KINDS = ("PASS", "FAIL", "SKIP", "ERROR", "XFAIL", "UXPASS", "INCOMPLETE")


def parse_time(text):
    text = text.strip().rstrip("Z")
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S"):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            pass
    return None


def summarize(lines):
    """[(name, result, seconds or None, reason)] in the order the tests started."""
    tests = {}  # name -> [result, seconds, reason]
    order, started = [], {}
    now = None
    reason_of = None  # the test whose multi-line reason ("name [" ... "]") is being read
    reason = []
    for line in lines:
        if reason_of is not None:
            if line.strip() == "]":
                tests[reason_of][2] = next((r.strip() for r in reason if r.strip()), "")
                reason_of, reason = None, []
            else:
                reason.append(line)
            continue
        t = TIME_LINE.search(line)
        if t:
            now = parse_time(t.group(1)) or now
            continue
        t = TEST_LINE.match(line)
        if t:
            name = t.group(1)
            started[name] = now
            if name not in tests:
                order.append(name)
                tests[name] = ["INCOMPLETE", None, "no result (timeout or crash)"]
            continue
        m = RESULT_LINE.match(line)
        if not m:
            continue  # smbtorture's own progress text, mixed into the log
        name, multiline, inline = m.group(2), False, ""
        r = REASON_START.match(name)
        if r:
            name, multiline = r.group(1), True
        else:
            r = REASON_INLINE.match(name)
            if r:
                name, inline = r.group(1), r.group(2)
        if name not in tests:
            order.append(name)
            tests[name] = ["INCOMPLETE", None, ""]
        tests[name][0] = RESULTS[m.group(1)]
        tests[name][2] = inline
        if started.get(name) and now:
            tests[name][1] = (now - started[name]).total_seconds()
        if multiline:
            reason_of, reason = name, []
    return [(n, *tests[n]) for n in order]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    suite, path = sys.argv[1], sys.argv[2]
    status = sys.argv[3] if len(sys.argv) > 3 else "?"
    with open(path, errors="replace") as f:
        rows = summarize(f.read().splitlines())
    names = [r[0] for r in rows]
    # smbtorture also reports a suite that has sub-tests (smb2.lock) as a test of its own:
    # count leaves only, i.e. drop a name that prefixes another.
    leaves = {n for n in names if not any(o.startswith(n + ".") for o in names)}
    counts = dict.fromkeys(KINDS, 0)
    if not leaves:
        print(f"ERROR       {suite}  -  no test ran (see the log)")
        counts["ERROR"] += 1
    for name, result, secs, reason in rows:
        if name in leaves:
            counts[result] += 1
            s = f"{secs:7.2f}s" if secs is not None else "      -s"
            print(f"{result:<11} {name}  {s}  {reason[:160]}".rstrip())
        elif result in ("FAIL", "ERROR"):
            # A failed setup shows as a result for the suite itself.
            print(f"# suite-level {result} of {name}: {reason[:160]}")
    print(f"# {suite}: " + " ".join(f"{k.lower()}={counts[k]}" for k in KINDS)
          + f" total={sum(counts.values())} exit={status}")


if __name__ == "__main__":
    main()
