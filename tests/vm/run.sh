#!/bin/bash
# VM tests of daxsmbd (tests/vm/build-image.sh's Debian 12 guest; KVM when the host has it,
# else software emulation), three boots:
#   1. tests/vm/guest_dax.sh: the DAX path on an emulated NVDIMM (/dev/pmem0, fsdax) with ext4 and
#      xfs mounted -o dax, checked with smbclient and the Linux kernel client, plus the kernel
#      client on a plain (non-DAX) share, and the device health metrics of a share on an
#      emulated NVMe disk;
#   2.+3. tests/vm/durability.sh: crash durability of DAX write-through writes (write, crash,
#      verify on the same NVDIMM backing file);
#   4. tests/vm/handles.sh: durable and persistent handles with the kernel client (a 64 MiB
#      copy survives the server's end of its TCP connection being killed mid-copy, and on a
#      continuously available share a SIGKILL and restart of the server);
#   5. tests/vm/smbdirect.sh against daxsmbd, in the Debian 13 guest (SMBDIRECT_GUEST): its 7.x
#      kernel client signs and seals over SMB Direct correctly (6.1's does not) and its rxe has
#      On-Demand Paging, so the DAX share runs in direct mode.
# Exits non-zero on any failure. About 13-22 minutes, and the first build of the Debian 13 image
# about 5 more (VM_DURABILITY=0 skips 2.+3., VM_HANDLES=0 skips 4., VM_SMBDIRECT=0 skips 5.).
#
#   tests/vm/run.sh            (as root: qemu, and the image build when missing or out of date)
#   GUEST=trixie tests/vm/run.sh   the same in the Debian 13 guest (kernel 7.x)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

vm_ensure_image
vm_ensure_binaries
STAGE=$(mktemp -d /tmp/daxsmbd-vm.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$STAGE"' EXIT
vm_stage "$STAGE"
vlog "staged in $STAGE: $(ls "$STAGE/lib" | wc -l) libraries"
rc=0
NVME_SIZE=${NVME_SIZE:-256M} VM_TIMEOUT=${VM_TIMEOUT:-900} vm_run "$STAGE/guest_dax.sh" "$STAGE" || rc=$?
if [ "$rc" != 0 ]; then
    vlog "FAILED (exit $rc); guest console: $VM_CONSOLE_LOG"
    for f in "$STAGE"/daxsmbd-*.log; do
        [ -f "$f" ] && { vlog "--- $(basename "$f") (last lines)"; tail -20 "$f" >&2; }
    done
fi
if [ "${VM_DURABILITY:-1}" != 0 ]; then
    drc=0
    VM_NAME=durability "$(dirname "$0")/durability.sh" || drc=$?
    [ "$rc" != 0 ] || rc=$drc
fi
if [ "${VM_HANDLES:-1}" != 0 ]; then
    hrc=0
    VM_NAME=handles "$(dirname "$0")/handles.sh" || hrc=$?
    [ "$rc" != 0 ] || rc=$hrc
fi
if [ "${VM_SMBDIRECT:-1}" != 0 ]; then
    src=0
    GUEST=${SMBDIRECT_GUEST:-trixie} VM_NAME=smbdirect SD_SERVERS=daxsmbd SD_READS=${SD_READS:-2000} \
        "$(dirname "$0")/smbdirect.sh" || src=$?
    [ "$rc" != 0 ] || rc=$src
fi
exit "$rc"
