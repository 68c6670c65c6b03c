#!/bin/bash
# The guest half of tests/vm/run-in-vm.sh, run as root by the image's vmrun.service (through
# /usr/local/sbin/vmrun-boot, which mounts the run's 9p share at /vmrun): sends all output to the
# virtio-serial port the host streams, mounts /host, puts the NVDIMM in fsdax mode, runs
# /vmrun/script under its time limit, writes its exit status to /vmrun/exit-code and powers off.
# It comes with each run (not with the image), so changing it needs no new image.
set -euo pipefail
export HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
VMRUN=/vmrun
SCRIPT_TIMEOUT=600 HAVE_HOST=0 PMEM_MODE=raw
# shellcheck disable=SC1091  # written by run-in-vm.sh for this run
. "$VMRUN/env"

# Whatever happens below, the guest must power off: the host would otherwise wait for its
# time limit.
power_off() {
    sync
    systemctl poweroff -ff 2>/dev/null || echo o >/proc/sysrq-trigger
}
trap power_off EXIT

# The output port: virtio-serial's name is known only once the device has probed.
modprobe -q virtio_console 2>/dev/null || true
out=""
for _ in $(seq 100); do
    for f in /sys/class/virtio-ports/*/name; do
        if [ -r "$f" ] && [ "$(cat "$f")" = vmrun.out ]; then out=/dev/$(basename "$(dirname "$f")"); fi
    done
    if [ -n "$out" ] && [ -c "$out" ]; then break; fi
    out=""
    sleep 0.1
done
exec >"${out:-/dev/console}" 2>&1 </dev/null

echo "[vmrun] kernel $(uname -r), script starts at guest uptime $(cut -d' ' -f1 /proc/uptime) s"
if [ "$HAVE_HOST" = 1 ]; then
    mkdir -p /host
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none host /host ||
        echo "[vmrun] WARNING: cannot mount the host directory at /host"
fi
# qemu's NVDIMM has no label area, so namespace0.0 boots in raw mode, which is not DAX-capable
# (ext4: "DAX unsupported by block device"; xfs silently mounts without DAX). fsdax mode fixes
# that in under 2 seconds.
if [ "$PMEM_MODE" = fsdax ]; then
    modprobe -q nd_pmem || true
    modprobe -q dax_pmem || true
    for _ in $(seq 50); do
        [ -b /dev/pmem0 ] && break
        sleep 0.1
    done
    if ndctl list -n namespace0.0 2>/dev/null | grep -q '"mode":"fsdax"'; then
        echo "[vmrun] /dev/pmem0 is in fsdax mode"
    elif ndctl create-namespace -f -e namespace0.0 -m fsdax >/dev/null 2>/tmp/ndctl.err; then
        echo "[vmrun] /dev/pmem0: namespace0.0 now in fsdax mode, $(($(blockdev --getsize64 /dev/pmem0) >> 20)) MiB"
    else
        echo "[vmrun] WARNING: ndctl create-namespace -m fsdax failed: $(cat /tmp/ndctl.err)"
    fi
fi
export VMRUN_HOST=/host VMRUN_DIR=$VMRUN
cd /root

# A script without a #! line runs under bash.
interp=()
[ "$(head -c 2 "$VMRUN/script")" = '#!' ] || interp=(/bin/bash)
timeout -k 10 "$SCRIPT_TIMEOUT" "${interp[@]}" "$VMRUN/script" &
child=$!
# A script stuck in uninterruptible sleep (a hung mount, say) survives even SIGKILL: give up on
# it a little after its limit instead of waiting forever.
deadline=$((SECONDS + SCRIPT_TIMEOUT + 30))
rc=""
while kill -0 "$child" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        rc=124
        echo "[vmrun] the script still runs 30 s after its limit: powering off"
        break
    fi
    sleep 0.2
done
if [ -z "$rc" ]; then
    rc=0
    wait "$child" || rc=$?
fi
[ "$rc" != 124 ] || echo "[vmrun] the script timed out after ${SCRIPT_TIMEOUT} s"
echo "[vmrun] script exit status $rc at guest uptime $(cut -d' ' -f1 /proc/uptime) s"
echo "$rc" >"$VMRUN/exit-code"
