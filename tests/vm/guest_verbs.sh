#!/bin/bash
# Guest half of tests/vm/verbs.sh: the verbs provider's test (unit_smbdirect, VerbsProviderTest)
# over soft-RoCE. rxe0 sits on a dummy interface (sd0, 192.0.2.1/24): rdma_cm cannot resolve
# routes over rxe on `lo`. The kernel's RDMA resource tracking (`rdma resource show`) must be
# back at its baseline once the test process is gone; the test itself checks the same after
# every case, while the process still runs.
# With siw in the image, a second run goes over iWARP (siw0 on sd1, 198.51.100.1/24); its
# outcome is reported, not required.
set -u
. "${VMRUN_HOST:-/host}/guest_common.sh"
TEST=$H/bin/unit_smbdirect
FILTER='VerbsProviderTest.*'

modprobe rdma_rxe
modprobe ib_uverbs 2>/dev/null || true
ip link add sd0 type dummy && ip addr add 192.0.2.1/24 dev sd0 && ip link set sd0 up
check "rdma link add rxe0 type rxe netdev sd0" rdma link add rxe0 type rxe netdev sd0
rdma link show
ibv_devinfo -v -d rxe0 2>/dev/null | grep -E 'fw_ver|max_qp_wr|max_sge|max_sge_rd|max_cqe|max_qp_rd_atom|max_qp_init_rd_atom|max_mr_size|max_msg_sz|active_mtu|active_speed|active_width|transport|odp' || true
SIW=0
if modprobe siw 2>/dev/null; then
    ip link add sd1 type dummy && ip addr add 198.51.100.1/24 dev sd1 && ip link set sd1 up
    rdma link add siw0 type siw netdev sd1 2>/tmp/siw.err && SIW=1
    [ "$SIW" = 1 ] || echo "note: no siw0: $(cat /tmp/siw.err)"
fi
sleep 1

rdma resource show >/tmp/rdma-before.txt
echo "rdma resources before:"
sed 's/^/    /' /tmp/rdma-before.txt

# run_test LOG [ENV...]: the provider's test, output in LOG and on stdout.
run_test() {
    local log=$1
    shift
    env "$@" timeout 300 "$TEST" --gtest_filter="$FILTER" >"$log" 2>&1
    local rc=$?
    cat "$log"
    return $rc
}

run_test "$H/verbs-rxe.log"
rc=$?
if [ "$rc" = 0 ] && ! grep -q '^\[  SKIPPED \]' "$H/verbs-rxe.log" && grep -q '^\[  PASSED  \]' "$H/verbs-rxe.log"; then
    ok "VerbsProviderTest over rxe0 ($(grep -o '^\[  PASSED  \] [0-9]* tests' "$H/verbs-rxe.log"))"
else
    bad "VerbsProviderTest over rxe0 (exit $rc; skipped: $(grep -c '^\[  SKIPPED \]' "$H/verbs-rxe.log"))"
    dmesg | tail -20 | sed 's/^/    | /'
fi

if [ "$SIW" = 1 ]; then
    if run_test "$H/verbs-siw.log" DAXSMBD_VERBS_TEST_ADDR=198.51.100.1 >/dev/null; then
        echo "note: VerbsProviderTest over siw0 (iWARP) passed"
    else
        echo "note: VerbsProviderTest over siw0 (iWARP) did not pass:"
        grep -E '^\[  (FAILED|PASSED|SKIPPED) |Failure|rdma interface|Expected|Which is' "$H/verbs-siw.log" | head -40 | sed 's/^/    | /'
    fi
fi

rdma resource show >/tmp/rdma-after.txt
if diff -u /tmp/rdma-before.txt /tmp/rdma-after.txt >/tmp/rdma-diff.txt; then
    ok "rdma resource show: back at the baseline after the test process"
else
    bad "rdma resource show differs from the baseline"
    sed 's/^/    | /' /tmp/rdma-diff.txt
fi
rdma resource show cm_id 2>/dev/null | head -5
dmesg | grep -E 'WARNING:|BUG:|Oops' | head -5
finish
