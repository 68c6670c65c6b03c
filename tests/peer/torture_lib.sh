# shellcheck shell=bash disable=SC2034  # variables here are read by the scripts sourcing it
# smbtorture pieces shared by the smbtorture stage (tests/interop/smbtorture.sh, against daxsmbd)
# and the Samba baseline it compares with (tests/peer/smbtorture-baseline.sh): the suites, and
# one suite's run with its summary, so that both sides are measured the same way.
#
#   . tests/peer/torture_lib.sh
#   torture_suite SUITE PORT LOGDIR TIMEOUT CLIENT_CONF USER PASSWORD
#       runs smbtorture SUITE against //127.0.0.1/data on PORT; writes LOGDIR/SUITE.log (the
#       subunit stream) and LOGDIR/SUITE.summary (tests/peer/subunit_summary.py), and prints the
#       summary's totals line

TORTURE_PEER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TORTURE_SUMMARIZE=$TORTURE_PEER_DIR/subunit_summary.py
TORTURE_BASELINE=$TORTURE_PEER_DIR/smbtorture-samba-baseline.txt
# The suites of the smbtorture stage: generic SMB2/3 behaviour that needs no Samba-selftest
# share or option. (smb2.aio_delay and smb2.change_notify_disabled hang without such shares;
# smb2.hold-oplock and smb2.hold-sharemode wait for a human.)
TORTURE_SUITES="smb2.connect smb2.read smb2.rw smb2.getinfo smb2.setinfo smb2.dir smb2.create
smb2.compound smb2.credits smb2.lock smb2.session smb2.session-require-signing smb2.tcon
smb2.acls smb2.sdread smb2.delete-on-close-perms smb2.oplock smb2.lease smb2.durable-open
smb2.durable-open-disconnect smb2.durable-v2-open smb2.replay smb2.multichannel"

torture_suite() {
    local suite=$1 port=$2 logdir=$3 tmo=$4 conf=$5 user=$6 pass=$7 rc=0
    # smbtorture leaves temporary directories in its working directory: the log directory.
    (cd "$logdir" && timeout -k 10 "$tmo" smbtorture --configfile="$conf" "//127.0.0.1/data" \
        -p "$port" -U "$user%$pass" --format=subunit --fullname "$suite" >"$logdir/$suite.log" 2>&1) ||
        rc=$?
    [ "$rc" != 124 ] || rc="124-timeout${tmo}s"
    /usr/bin/python3 "$TORTURE_SUMMARIZE" "$suite" "$logdir/$suite.log" "$rc" >"$logdir/$suite.summary"
    tail -n 1 "$logdir/$suite.summary"
}
