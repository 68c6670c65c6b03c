#!/bin/bash
# Crash durability of DAX write-through writes (two boots on one NVDIMM backing file):
#   boot 1: ext4 -o dax on /dev/pmem0, daxsmbd with dax = on, the kernel client writes a known
#           pattern block by block with O_SYNC (FILE_WRITE_THROUGH opens: each WRITE is flushed
#           and fenced before its response); after each acknowledged block its number is recorded
#           on the host; right after the last acknowledgement the guest crashes
#           (echo c > /proc/sysrq-trigger).
#   boot 2: same backing file (PMEM_FILE); mount, and every acknowledged block must be there.
# Exits non-zero on any failure. About 1.5 minutes (two boots).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

vm_ensure_image
vm_ensure_binaries
STAGE=$(mktemp -d /tmp/daxsmbd-vmdur.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$STAGE"' EXIT
vm_stage "$STAGE"
export PMEM_FILE=$STAGE/pmem.img PMEM_SIZE=1G

echo write >"$STAGE/phase"
rc=0
VM_TIMEOUT=240 "$SHARED_DIR/vm/run-in-vm.sh" "$STAGE/guest_durability.sh" "$STAGE" || rc=$?
# The crash makes the guest die without reporting an exit code (125).
if [ "$rc" != 125 ] || [ ! -s "$STAGE/acked" ]; then
    vlog "FAIL: the write boot ended with $rc (expected the crash, 125); acked: $(cat "$STAGE/acked" 2>/dev/null)"
    tail -20 "$STAGE"/daxsmbd-*.log >&2 2>/dev/null || true
    exit 1
fi
vlog "write boot crashed as planned after block $(cat "$STAGE/acked") was acknowledged"

echo verify >"$STAGE/phase"
rc=0
VM_TIMEOUT=120 "$SHARED_DIR/vm/run-in-vm.sh" "$STAGE/guest_durability.sh" "$STAGE" || rc=$?
if [ "$rc" = 0 ]; then vlog "PASS: every acknowledged write survived the crash"; else vlog "FAIL (exit $rc)"; fi
exit "$rc"
