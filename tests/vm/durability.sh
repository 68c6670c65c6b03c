#!/bin/bash
# Crash durability of DAX write-through writes (two boots on one NVDIMM backing file):
#   boot 1: ext4 -o dax on /dev/pmem0, daxsmbd with dax = on; the kernel client opens one file
#           with O_SYNC (FILE_WRITE_THROUGH: each WRITE is flushed and fenced before its
#           response) and appends a random pattern block by block; after each acknowledged block
#           its number is recorded on the host; right after the last acknowledgement, with the
#           file still open (no CLOSE), the guest crashes (echo c > /proc/sysrq-trigger).
#   boot 2: same backing file (PMEM_FILE); mount, and every acknowledged block must be there,
#           byte for byte.
# The host also checks the server's DAX counters from boot 1: every block went through the
# mapping (no fallback to the block path) with a persist each.
# Under qemu's software emulation there are no CPU caches between the guest and the backing
# file, so this proves the write/metadata ordering end to end (allocation, size, write-through
# before the response), not the cache flush instruction itself.
#
#   tests/vm/durability.sh                        (as root; two boots, about 1.5-3 minutes)
#   DURABILITY_NEGATIVE=1 tests/vm/durability.sh  negative control: boot 2 first damages the
#       file on the NVDIMM (cuts off the last acknowledged block, flips one byte of block 10);
#       passes only if the verification reports exactly those two blocks.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

vm_ensure_image
vm_ensure_binaries
STAGE=$(mktemp -d /tmp/daxsmbd-vmdur.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$STAGE"' EXIT
vm_stage "$STAGE"
# The NVDIMM backing outside the 9p share (the guest has no business seeing it).
mkdir "$STAGE/nvdimm"
export PMEM_FILE=$STAGE/nvdimm/pmem.img PMEM_SIZE=512M
mkdir "$STAGE/share"
mv "$STAGE"/bin "$STAGE"/lib "$STAGE"/guest_*.sh "$STAGE/share/"
SHARE=$STAGE/share
BLOCKS=$(sed -n 's/^BLOCKS=//p' "$SHARE/guest_durability.sh")

echo write >"$SHARE/phase"
rc=0
VM_TIMEOUT=300 vm_run "$SHARE/guest_durability.sh" "$SHARE" || rc=$?
# The crash makes the guest die without reporting an exit code (125).
acked=$(cat "$SHARE/acked" 2>/dev/null || true)
if [ "$rc" != 125 ] || [ -z "$acked" ]; then
    vlog "FAIL: the write boot ended with $rc (expected the crash, 125); last acknowledged block: ${acked:-none}"
    tail -20 "$SHARE"/daxsmbd-*.log >&2 2>/dev/null || true
    exit 1
fi
stats=$(cat "$SHARE/write_stats" 2>/dev/null || true)
stat_of() { # KEY: its value in the server's "dax: ..." line, -1 when absent
    local v
    v=$(printf '%s\n' "$stats" | tr ' ' '\n' | sed -n "s/^$1=//p")
    echo "${v:--1}"
}
vlog "write boot crashed as planned after block $acked was acknowledged; server: $stats"
if [ "$acked" != $((BLOCKS - 1)) ] || [ "$(stat_of writes)" -lt "$BLOCKS" ] ||
    [ "$(stat_of persists)" -lt "$BLOCKS" ] || [ "$(stat_of fallbacks)" != 0 ] ||
    [ "$(stat_of media_errors)" != 0 ]; then
    vlog "FAIL: expected $BLOCKS acknowledged blocks, each a DAX write with a persist and no fallback"
    exit 1
fi

phase=verify
[ "${DURABILITY_NEGATIVE:-0}" = 1 ] && phase=verify-tampered
echo "$phase" >"$SHARE/phase"
rc=0
VM_TIMEOUT=120 vm_run "$SHARE/guest_durability.sh" "$SHARE" || rc=$?
if [ "$phase" = verify-tampered ]; then
    want=$(printf '10 differs\n%s missing\n' "$acked")
    if [ "$rc" = 1 ] && [ "$(cat "$SHARE/bad_blocks" 2>/dev/null)" = "$want" ]; then
        vlog "PASS (negative control): the verification found exactly the damaged blocks 10 and $acked"
        exit 0
    fi
    vlog "FAIL (negative control): verify exit $rc, bad blocks: $(tr '\n' ' ' <"$SHARE/bad_blocks" 2>/dev/null)"
    exit 1
fi
if [ "$rc" = 0 ]; then vlog "PASS: all $BLOCKS acknowledged write-through blocks survived the crash"; else
    vlog "FAIL (verify boot exit $rc); guest console: $VM_CONSOLE_LOG"
fi
exit "$rc"
