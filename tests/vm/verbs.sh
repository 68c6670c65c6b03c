#!/bin/bash
# The verbs provider (smbdirect/verbs_provider.h) over soft-RoCE in the VM: the
# VerbsProviderTest cases of unit_smbdirect (listener and initiator in one process connected
# through rxe0: sends both ways, Send with Invalidate, RDMA WRITE and READ verified byte by byte,
# flushes after the peer disconnects), and the kernel's RDMA resources back at their baseline
# afterwards. Guest half: tests/vm/guest_verbs.sh.
#
#   tests/vm/verbs.sh         (as root; one boot, about 1-2 minutes under TCG)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

vm_ensure_image
vm_ensure_binaries unit_smbdirect
STAGE=$(mktemp -d /tmp/daxsmbd-vmverbs.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$STAGE"' EXIT
vm_stage "$STAGE" unit_smbdirect
rc=0
VM_TIMEOUT=${VM_TIMEOUT:-600} vm_run "$STAGE/guest_verbs.sh" "$STAGE" || rc=$?
if [ "$rc" = 0 ]; then vlog "PASS"; else
    vlog "FAIL (exit $rc); test output: $STAGE/verbs-rxe.log (KEEP=1 keeps it), guest console: $VM_CONSOLE_LOG"
fi
exit "$rc"
