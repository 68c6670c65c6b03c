#!/bin/bash
# VM tests of daxsmbd (one boot of ../shared/vm's Debian 12 guest, software-emulated): the DAX
# path on an emulated NVDIMM (/dev/pmem0, fsdax) with ext4 and xfs mounted -o dax, checked with
# smbclient and the Linux kernel client, plus the kernel client on a plain (non-DAX) share. The
# guest half is tests/vm/guest_dax.sh; the crash-durability test is tests/vm/durability.sh (two
# boots, run separately). Exits non-zero on any failure. About 2-3 minutes.
#
#   tests/vm/run.sh            (as root: qemu, and the image build when missing)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

vm_ensure_image
vm_ensure_binaries
STAGE=$(mktemp -d /tmp/daxsmbd-vm.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$STAGE"' EXIT
vm_stage "$STAGE"
vlog "staged in $STAGE: $(ls "$STAGE/lib" | wc -l) libraries"
rc=0
VM_TIMEOUT=${VM_TIMEOUT:-900} "$SHARED_DIR/vm/run-in-vm.sh" "$STAGE/guest_dax.sh" "$STAGE" || rc=$?
if [ "$rc" != 0 ]; then
    vlog "FAILED (exit $rc); guest console: $VMCACHE/last-console.log"
    for f in "$STAGE"/daxsmbd-*.log; do
        [ -f "$f" ] && { vlog "--- $(basename "$f") (last lines)"; tail -20 "$f" >&2; }
    done
fi
exit "$rc"
