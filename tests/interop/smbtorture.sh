#!/bin/bash
# smbtorture smb2.* suites against daxsmbd (started by lib.sh on a free loopback port, share
# "data"), compared test by test with tests/interop/smbtorture-expected.txt:
#   - a test expected to PASS that does not pass is a regression: the run fails;
#   - a test that passes but is not expected to is an improvement: reported, not a failure
#     (run with --update to record it);
#   - the server dying during a suite fails the run (it is restarted for the next suite).
# Prints a per-suite table of passes next to Samba's (tests/peer/smbtorture-samba-baseline.txt,
# made by tests/peer/smbtorture-baseline.sh with the same suites and runner).
#
#   tests/interop/smbtorture.sh [--update] [SUITE...]
#     --update   rewrite the expected file with this run's results (for the suites run; lines of
#                other suites are kept)
#   Environment: SMBTORTURE_TIMEOUT per suite (300 s), SMBTORTURE_BUDGET for all suites
#     (2400 s; a suite that does not fit is not run and fails the run), TORTURE_LOGDIR for the
#     raw subunit logs and summaries (default build/smbtorture-logs), INTEROP_SERVER=samba to run
#     the same against Samba (see lib.sh).
# smb2.session-require-signing runs against the server restarted with "server signing = mandatory"
# (what the suite tests); every other suite against the default configuration.
# Expected file format: one "suite.test RESULT" line per test (RESULT as
# tests/peer/subunit_summary.py prints it: PASS FAIL SKIP ERROR XFAIL UXPASS INCOMPLETE); '#'
# starts a comment.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=../peer/torture_lib.sh
. "$INTEROP_ROOT/tests/peer/torture_lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
EXPECTED=${SMBTORTURE_EXPECTED:-$HERE/smbtorture-expected.txt}
TMO=${SMBTORTURE_TIMEOUT:-300}
BUDGET=${SMBTORTURE_BUDGET:-2400}
LOGDIR=${TORTURE_LOGDIR:-$DAXSMBD_BUILD/smbtorture-logs}
UPDATE=0

SUITES=()
for a in "$@"; do
    case $a in
        --update) UPDATE=1 ;;
        -h | --help)
            sed -n '2,24p' "$0"
            exit 0
            ;;
        -*)
            echo "unknown option $a" >&2
            exit 2
            ;;
        *) SUITES+=("$a") ;;
    esac
done
# shellcheck disable=SC2206  # the default list is split on whitespace on purpose
[ ${#SUITES[@]} -gt 0 ] || SUITES=($TORTURE_SUITES)

command -v smbtorture >/dev/null || die "smbtorture is not installed (package samba-testsuite)"
[ -f "$EXPECTED" ] || die "$EXPECTED not found"

# The server's "server signing" (daxsmbd and Samba both take the key): replaced or added in
# [global], then the server is restarted.
set_server_signing() {
    sed -i '/^[[:space:]]*server signing[[:space:]]*=/d' "$CONF"
    sed -i "s/^\[global\]\$/[global]\n    server signing = $1/" "$CONF"
    restart_server || die "cannot restart the server with server signing = $1"
}

# smb2.session fails dozens of logons on purpose (wrong passwords, anonymous, bad binds); with the
# per-address logon throttle on, every later logon from 127.0.0.1 would wait seconds and the suite
# would run out of time. Samba has no such throttle, so the comparison runs without it.
export DAXSMBD_EXTRA_GLOBAL="    logon failure delay = 0"
interop_setup
mkdir -p "$LOGDIR"
rm -f "$LOGDIR"/*.log "$LOGDIR"/*.summary "$LOGDIR"/problems
: >"$LOGDIR/problems"  # server deaths and suites not run: each fails the run
START=$SECONDS

for s in "${SUITES[@]}"; do
    left=$((BUDGET - (SECONDS - START)))
    if [ "$left" -lt 30 ]; then
        log "$s: not run, the time budget of ${BUDGET}s is spent"
        echo "$s: not run, the time budget of ${BUDGET}s was spent" >>"$LOGDIR/problems"
        printf 'ERROR       %s  -  not run: time budget spent\n# %s: pass=0 fail=0 skip=0 error=1 xfail=0 incomplete=0 total=1 exit=budget\n' \
            "$s" "$s" >"$LOGDIR/$s.summary"
        continue
    fi
    tmo=$((left < TMO ? left : TMO))
    if ! server_alive; then
        echo "$s: the server was not running before the suite" >>"$LOGDIR/problems"
        restart_server || die "cannot restart the server"
    fi
    if [ "$s" = smb2.session-require-signing ]; then set_server_signing mandatory; fi
    # Each suite starts from an empty share, as the Samba baseline did.
    find "$DATA_DIR" -mindepth 1 -delete 2>/dev/null || true
    t0=$SECONDS
    totals=$(torture_suite "$s" "$PORT" "$LOGDIR" "$tmo" "$TESTDIR/client.conf" "$SMB_USER" "$SMB_PASS")
    log "$totals wall=$((SECONDS - t0))s"
    if ! server_alive; then
        log "$s: the server died during this suite"
        echo "$s: the server died during this suite" >>"$LOGDIR/problems"
        tail -n 50 "$LOG" | sed 's/^/  | /' >&2
        restart_server || die "cannot restart the server"
    fi
    if [ "$s" = smb2.session-require-signing ]; then set_server_signing auto; fi
done

cat >"$LOGDIR/compare.py" <<'EOF'
import os, re, sys
expected_path, baseline_path, logdir, update = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == '1'
suites = sys.argv[5:]

def in_suites(name):
    return any(name == s or name.startswith(s + '.') for s in suites)

# this run: name -> result, in run order
actual, order, counts = {}, [], {}
for s in suites:
    with open(os.path.join(logdir, s + '.summary')) as f:
        for line in f:
            m = re.match(r'#\s*(\S+):\s*(.*)$', line)
            if m and '=' in m.group(2):
                counts[m.group(1)] = dict(kv.split('=', 1) for kv in m.group(2).split())
                continue
            if line.startswith('#') or not line.strip():
                continue
            res, name = line.split()[:2]
            if name not in actual:
                order.append(name)
            actual[name] = res

expected, exp_lines = {}, []
with open(expected_path) as f:
    for line in f:
        exp_lines.append(line)
        t = line.split('#', 1)[0].split()
        if len(t) >= 2:
            expected[t[0]] = t[1]

samba = {}
if os.path.exists(baseline_path):
    with open(baseline_path) as f:
        for line in f:
            m = re.match(r'#\s*(smb2\.\S+):\s*(pass=.*)$', line)
            if m and m.group(1) not in samba:
                samba[m.group(1)] = dict(kv.split('=', 1) for kv in m.group(2).split())

regressions = sorted(n for n, r in expected.items() if r == 'PASS' and in_suites(n) and actual.get(n) != 'PASS')
improvements = [n for n in order if actual[n] == 'PASS' and expected.get(n) != 'PASS']

print('%-22s %14s %14s %6s %6s' % ('suite', 'daxsmbd pass', 'samba pass', 'regr', 'impr'))
tot = [0, 0, 0, 0]
for s in suites:
    c = counts.get(s, {})
    b = samba.get(s)
    r = sum(1 for n in regressions if n == s or n.startswith(s + '.'))
    i = sum(1 for n in improvements if n == s or n.startswith(s + '.'))
    dp, dt = int(c.get('pass', 0)), int(c.get('total', 0))
    tot[0] += dp; tot[1] += dt
    bs = '%d/%d' % (int(b['pass']), int(b['total'])) if b else '-'
    if b:
        tot[2] += int(b['pass']); tot[3] += int(b['total'])
    print('%-22s %14s %14s %6d %6d' % (s, '%d/%d' % (dp, dt), bs, r, i))
print('%-22s %14s %14s %6d %6d' % ('total', '%d/%d' % (tot[0], tot[1]), '%d/%d' % (tot[2], tot[3]),
                                   len(regressions), len(improvements)))
for n in regressions:
    print('REGRESSION  %s: expected PASS, got %s' % (n, actual.get(n, 'nothing (not run)')))
for n in improvements:
    print('IMPROVED    %s: now PASS (expected %s)' % (n, expected.get(n, 'nothing')))

if update:
    kept = [l for l in exp_lines
            if not (l.split('#', 1)[0].split() and in_suites(l.split()[0]))]
    header = [l for l in kept if l.startswith('#')]
    others = [l for l in kept if not l.startswith('#') and l.strip()]
    if not header:
        header = ['# smbtorture results expected from daxsmbd: "suite.test RESULT" per line.\n',
                  '# Written by tests/interop/smbtorture.sh --update; a PASS here that stops passing fails CI.\n']
    with open(expected_path, 'w') as f:
        f.writelines(header)
        f.writelines(others)
        for n in order:
            f.write('%s %s\n' % (n, actual[n]))
    print('updated %s: %d tests of %d suites' % (expected_path, len(order), len(suites)))
sys.exit(1 if regressions else 0)
EOF

rc=0
/usr/bin/python3 "$LOGDIR/compare.py" "$EXPECTED" "$TORTURE_BASELINE" "$LOGDIR" "$UPDATE" "${SUITES[@]}" || rc=$?
if [ -s "$LOGDIR/problems" ]; then
    sed 's/^/PROBLEM     /' "$LOGDIR/problems"
    rc=1
fi
log "logs: $LOGDIR"
if [ "$rc" -eq 0 ]; then log "no regression"; else log "FAILED: see above"; fi
exit "$rc"
