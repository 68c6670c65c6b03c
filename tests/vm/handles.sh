#!/bin/bash
# Durable and persistent handles with the Linux kernel client, in one boot of the VM guest
# (tests/vm/guest_handles.sh does the work). Each scenario is a 64 MiB copy (dd, 1 MiB
# O_DIRECT writes) onto a share mounted with the client's default cache mode, cut off 1-2 s in
# while the client waits for a WRITE response:
#   - durable: a plain share (the client asks for a lease and a durable handle); the server's
#     end of the TCP connection is killed (ss -K). The server logs "durable handle '...' kept
#     for N ms after its connection was lost", then "... reconnected (vN)".
#   - persistent: "continuous availability = yes" (the client asks for a persistent handle);
#     the server is killed with SIGKILL and started again. The new server logs "1 persistent
#     handles restored" and then the reconnect.
# Each copy ends well and the file on the server's disk has the source's sha256. (Without the
# handles the copies end well too, the client opening the file anew, and only the log checks
# fail: they are the proof.)
#
#   tests/vm/handles.sh        (as root; one boot, about 2-4 minutes under TCG)
#
# Environment: lib.sh's and run-in-vm.sh's (GUEST, VM_TIMEOUT, VM_CONSOLE=1, KEEP=1).
# Exit status: the guest script's (0: every check passed).
set -euo pipefail
# shellcheck source=tests/vm/lib.sh disable=SC1091
. "$(dirname "$0")/lib.sh"

vm_ensure_image
# shellcheck disable=SC2119  # no further binaries
vm_ensure_binaries
STAGE=$(mktemp -d /tmp/daxsmbd-vmhandles.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$STAGE"' EXIT
vm_stage "$STAGE"
rc=0
VM_TIMEOUT=${VM_TIMEOUT:-600} vm_run "$STAGE/guest_handles.sh" "$STAGE" || rc=$?
if [ "$rc" = 0 ]; then vlog "PASS"; else
    vlog "FAIL (exit $rc); guest console: $VM_CONSOLE_LOG"
    for f in "$STAGE"/daxsmbd-*.log; do
        [ -f "$f" ] && { vlog "--- $(basename "$f") (last lines)"; tail -20 "$f" >&2; }
    done
fi
exit "$rc"
