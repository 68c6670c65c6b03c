#!/bin/bash
# SMB Direct (SMB2 over RDMA) with the Linux kernel client, in one boot of the VM guest
# (tests/vm/guest_smbdirect.sh does the work): soft-RoCE (rdma_rxe) on a dummy interface and on
# a veth pair, soft-iWARP (siw) when the image has it; first ksmbd, the kernel's own server, as
# the reference that proves the harness, then daxsmbd with "server smb transports = tcp, rdma",
# a block share and a DAX share on the emulated NVDIMM:
#   - mount -o rdma; 32 MiB written and read back, sha256 compared on the client and on the
#     server; the server's "smbdirect: ..." counters (SIGUSR1) show RDMA READs, RDMA WRITEs and
#     Send With Invalidate, and on the DAX share bounce (6.1: rxe has no ODP) or direct bytes;
#   - 2000 back-to-back 64 KiB reads; signing (the data then travels in sends) and encryption
#     (64 KiB reads and writes); two channels over two rxe devices;
#   - robustness: a dd killed mid-I/O, sd0 down and up, rxe0 removed (idle, then under a live
#     mount) and added again: the server keeps serving over TCP, a fresh RDMA mount works, and
#     the RDMA resources it holds are back to their idle count after the unmounts;
#   - siw: a mount over iWARP (port 5445).
#
#   tests/vm/smbdirect.sh           (as root; about 10-20 minutes under TCG)
#
# Environment (besides lib.sh's and run-in-vm.sh's: GUEST, VM_TIMEOUT, VM_CONSOLE=1, KEEP=1):
#   SD_SERVERS     the servers, in this order (ksmbd daxsmbd); SD_SERVERS=ksmbd runs the
#                  reference alone, SD_SERVERS=daxsmbd skips it
#   SD_KSMBD       core (default: ksmbd gets the 32 MiB check) or full (every scenario)
#   SD_SIZE_MB     the main file (32); SD_READS (2000); STEP_TIMEOUT per step (60 s)
#   SD_LOG_LEVEL   daxsmbd's log level (1; 3 traces every request and RDMA operation)
#   SD_ONLY        one daxsmbd scenario after the first core check: signed, multichannel,
#                  kill, link, siw, removal (for chasing a failure)
#   SD_OUT         where the guest output, the server logs and the client's DebugData are kept
#                  (<build>/smbdirect-vm)
# Exit status: the guest script's (0: every check passed).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
SD_OUT=${SD_OUT:-$DAXSMBD_BUILD/smbdirect-vm}

vm_ensure_image
vm_ensure_binaries
STAGE=$(mktemp -d /tmp/daxsmbd-vmsd.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$STAGE"' EXIT
vm_stage "$STAGE"
{
    printf 'SD_SERVERS=%q\n' "${SD_SERVERS:-ksmbd daxsmbd}"
    printf 'SD_KSMBD=%q\n' "${SD_KSMBD:-core}"
    printf 'SD_SIZE_MB=%q\nSD_READS=%q\n' "${SD_SIZE_MB:-32}" "${SD_READS:-2000}"
    printf 'STEP_TIMEOUT=%q\n' "${STEP_TIMEOUT:-60}"
    printf 'SD_LOG_LEVEL=%q\n' "${SD_LOG_LEVEL:-1}"
    printf 'SD_ONLY=%q\n' "${SD_ONLY:-}"
} >"$STAGE/smbdirect.env"
rm -rf "$SD_OUT"
mkdir -p "$SD_OUT"

rc=0
VM_TIMEOUT=${VM_TIMEOUT:-1800} vm_run "$STAGE/guest_smbdirect.sh" "$STAGE" | tee "$SD_OUT/output.log" ||
    rc=${PIPESTATUS[0]}
cp "$STAGE"/daxsmbd-*.log "$STAGE"/debugdata-*.txt "$SD_OUT/" 2>/dev/null || true
cp "$VM_CONSOLE_LOG" "$SD_OUT/console.log" 2>/dev/null || true

passed=$(grep -c '^ok ' "$SD_OUT/output.log" || true)
failed=$(grep -c '^FAIL ' "$SD_OUT/output.log" || true)
if grep -q 'has no SMB Direct yet' "$SD_OUT/output.log"; then
    vlog "daxsmbd does not support SMB Direct yet: its part failed at the start, as expected until it does"
fi
if [ "$rc" = 0 ]; then
    vlog "PASS: $passed checks; output, logs and DebugData in $SD_OUT"
else
    vlog "FAILED (exit $rc): $passed passed, $failed failed; output, logs, DebugData and the guest console in $SD_OUT"
    grep '^FAIL ' "$SD_OUT/output.log" | sed 's/^/    /' >&2 || true
    for f in "$SD_OUT"/daxsmbd-*.log; do
        [ -f "$f" ] && { vlog "--- $(basename "$f") (last lines)"; tail -n 15 "$f" >&2; }
    done
fi
exit "$rc"
