#!/bin/bash
# Measures Samba with the smbtorture suites of the smbtorture stage and writes the baseline that
# tests/interop/smbtorture.sh prints next to daxsmbd's results (its "samba pass" column):
# tests/peer/smbtorture-samba-baseline.txt, checked in, with the date and versions in its header.
#
#   tests/peer/smbtorture-baseline.sh [-o FILE] [SUITE...]     (as root; about 2 minutes)
#
# The same conditions as the stage: the suites and the per-suite runner of torture_lib.sh, the
# same client configuration, an empty share before each suite, smb2.session-require-signing
# against "server signing = mandatory" (what that suite tests). Samba is the private peer of
# samba-peer.sh in a temporary PEER_DIR on a free loopback port, restarted for every suite so
# that no suite sees what an earlier one left in the server.
# Environment: SMBTORTURE_TIMEOUT per suite (300 s), KEEP=1 keeps the temporary directory.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=torture_lib.sh
. "$HERE/torture_lib.sh"
OUT=$TORTURE_BASELINE
TMO=${SMBTORTURE_TIMEOUT:-300}
if [ "${1:-}" = -o ]; then
    OUT=$2
    shift 2
fi
# shellcheck disable=SC2206  # the default list is split on whitespace on purpose
SUITES=("$@")
# shellcheck disable=SC2206
[ ${#SUITES[@]} -gt 0 ] || SUITES=($TORTURE_SUITES)

log() { printf '[smbtorture-baseline] %s\n' "$*" >&2; }
command -v smbtorture >/dev/null || { log "smbtorture is missing (package samba-testsuite)"; exit 1; }

WORK=$(mktemp -d /tmp/daxsmbd-torture-baseline.XXXXXX)
chmod 755 "$WORK"
export PEER_DIR=$WORK/peer
SMB_PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export SMB_PORT
LOGDIR=$WORK/logs
mkdir -p "$LOGDIR"
cleanup() {
    "$HERE/samba-peer.sh" stop || true
    if [ "${KEEP:-0}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# What tests/interop/lib.sh gives smbtorture against daxsmbd.
printf '[global]\n    client min protocol = SMB2_02\n' >"$WORK/client.conf"

for s in "${SUITES[@]}"; do
    "$HERE/samba-peer.sh" stop
    extra=""
    [ "$s" != smb2.session-require-signing ] || extra="server signing = mandatory"
    SAMBA_EXTRA_GLOBAL=$extra "$HERE/samba-peer.sh" setup
    find "$PEER_DIR/share" -mindepth 1 -delete
    "$HERE/samba-peer.sh" start 2>/dev/null
    t0=$SECONDS
    log "$(torture_suite "$s" "$SMB_PORT" "$LOGDIR" "$TMO" "$WORK/client.conf" alice pw) wall=$((SECONDS - t0))s"
done

{
    echo "# smbtorture baseline of Samba, read by tests/interop/smbtorture.sh (its \"samba pass\" column)."
    echo "# Produced by tests/peer/smbtorture-baseline.sh on $(date -u +%F) (UTC): Samba $(smbd -V | awk '{print $2}')"
    echo "# in the configuration of tests/peer/samba-peer.sh, smbtorture $(smbtorture -V 2>/dev/null | awk '{print $2; exit}'),"
    echo "# Linux $(uname -r), $(nproc) CPUs. Per suite: Samba restarted on an empty share, then"
    echo "#   timeout $TMO smbtorture --configfile=CLIENT.CONF //127.0.0.1/data -p PORT -U alice%pw"
    echo "#     --format=subunit --fullname SUITE"
    echo "# with CLIENT.CONF \"client min protocol = SMB2_02\"; smb2.session-require-signing against"
    echo "# \"server signing = mandatory\". Totals per suite first, then every test (RESULT name seconds"
    echo "# reason, tests/peer/subunit_summary.py). Regenerate: tests/peer/smbtorture-baseline.sh"
    echo
    for s in "${SUITES[@]}"; do tail -n 1 "$LOGDIR/$s.summary"; done
    for s in "${SUITES[@]}"; do
        echo
        sed '$d' "$LOGDIR/$s.summary"
    done
} >"$OUT"
log "wrote $OUT"
