#!/bin/bash
# Boots the guest of tests/vm/build-image.sh under qemu, runs SCRIPT in it as root, shows the
# script's output on stdout and exits with the script's exit status.
#
#   tests/vm/run-in-vm.sh SCRIPT [HOSTDIR]     (as root)
#
# HOSTDIR, when given, is the guest's /host (9p, read-write: binaries in, results out). The guest
# has no network device: servers and clients inside it talk over its loopback (and over dummy or
# veth interfaces the script makes, e.g. for soft-RoCE). Its root disk is opened with
# snapshot=on, so every run starts from the pristine image; the script runs after
# multi-user.target with /root as working directory and VMRUN_HOST=/host.
#
# Exit status: the script's; 124 when the script or the VM timed out; 125 when the guest ended
# without reporting a status (a crash or panic; the last console lines are printed); 2 for a
# usage error or a missing image.
#
# Environment:
#   GUEST            bookworm (default) | trixie: which image of build-image.sh
#   VMCACHE          as for build-image.sh (~/.cache/daxsmbd-vm)
#   VM_TIMEOUT       seconds SCRIPT may run (600); qemu is killed VM_BOOT_TIMEOUT (180) seconds
#                    after that, for boot and power-off
#   VM_MEM, VM_SMP   guest memory and vCPUs (4G, 2)
#   PMEM_SIZE        the emulated NVDIMM (/dev/pmem0), a fresh sparse file per run (2G)
#   PMEM_FILE        keep the NVDIMM in this file instead (created with PMEM_SIZE when missing):
#                    what a crash test reuses for its second boot
#   PMEM_MODE        fsdax (default): the runner makes namespace0.0 fsdax before SCRIPT, so that
#                    ext4/xfs mount with -o dax; raw: leave it as booted (not DAX-capable)
#   NVME_SIZE        attach an emulated NVMe disk (/dev/nvme0n1) of this size, fresh per run;
#   NVME_FILE        or backed by this file (kept)
#   VM_ACCEL         auto (default) | kvm | tcg
#   VM_CPU           -cpu model (host with kvm, max with tcg)
#   VM_APPEND        more kernel command line
#   VM_CONSOLE=1     also stream the guest console (kernel, systemd) to stderr
#   VM_KEEP=1        keep the run directory (console log, qemu log) under <guest dir>/runs/
# The console log of the latest run is <guest dir>/last-console.log (VM_CONSOLE_LOG, printed).
set -euo pipefail

usage() {
    echo "usage: $0 SCRIPT [HOSTDIR]" >&2
    exit 2
}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
SCRIPT=$1
HOSTDIR=${2:-}
[ -f "$SCRIPT" ] || { echo "run-in-vm: no such script: $SCRIPT" >&2; exit 2; }
[ -z "$HOSTDIR" ] || [ -d "$HOSTDIR" ] || { echo "run-in-vm: no such directory: $HOSTDIR" >&2; exit 2; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GUEST=${GUEST:-bookworm}
VMCACHE=${VMCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/daxsmbd-vm}
GDIR=$VMCACHE/$GUEST-guest
IMGDIR=$GDIR/image
VM_TIMEOUT=${VM_TIMEOUT:-600}
VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-180}
PMEM_SIZE=${PMEM_SIZE:-2G}
PMEM_MODE=${PMEM_MODE:-fsdax}
VM_CONSOLE_LOG=$GDIR/last-console.log

log() { printf '[run-in-vm] %s\n' "$*" >&2; }
case $PMEM_MODE in fsdax | raw) ;; *) log "PMEM_MODE must be fsdax or raw"; exit 2 ;; esac
for f in disk.raw vmlinuz initrd.img; do
    [ -f "$IMGDIR/$f" ] || { log "no $IMGDIR/$f: run tests/vm/build-image.sh (GUEST=$GUEST) first"; exit 2; }
done
command -v qemu-system-x86_64 >/dev/null || { log "qemu-system-x86_64 is missing (.ci/install-deps.sh)"; exit 2; }

mkdir -p "$GDIR/runs"
RUN=$(mktemp -d "$GDIR/runs/run.XXXXXX")
QEMU_PID="" OUT_PID="" CON_PID=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    local p
    for p in $QEMU_PID $OUT_PID $CON_PID; do kill "$p" 2>/dev/null || true; done
    cp -f "$RUN/console.log" "$VM_CONSOLE_LOG" 2>/dev/null || true
    if [ "${VM_KEEP:-0}" = 1 ]; then log "run directory kept: $RUN"; else rm -rf "$RUN"; fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

# The run's 9p share "vmrun": the script, the guest runner, its settings; the runner writes the
# script's exit status back into it.
cp "$SCRIPT" "$RUN/script"
chmod 755 "$RUN/script"
cp "$HERE/runner-guest.sh" "$RUN/runner-guest.sh"
printf 'SCRIPT_TIMEOUT=%d\nHAVE_HOST=%d\nPMEM_MODE=%s\n' "$VM_TIMEOUT" "$([ -n "$HOSTDIR" ] && echo 1 || echo 0)" \
    "$PMEM_MODE" >"$RUN/env"
: >"$RUN/output.log"
: >"$RUN/console.log"

PMEM=${PMEM_FILE:-$RUN/pmem.img}
[ -f "$PMEM" ] || truncate -s "$PMEM_SIZE" "$PMEM"

# /dev/kvm provided by kvm_pvm (a software hypervisor of nested sandboxes) only runs guest
# kernels built for PVM: Debian's kernel hangs right after "Probing EDD", and -cpu host makes
# qemu abort ("failed to set MSR 0x10a"). auto takes TCG there.
ACCEL_MODE=${VM_ACCEL:-auto}
if [ "$ACCEL_MODE" = auto ]; then
    if [ -d /sys/module/kvm_pvm ]; then ACCEL_MODE=tcg
    elif [ -r /dev/kvm ] && [ -w /dev/kvm ]; then ACCEL_MODE=kvm
    else ACCEL_MODE=tcg; fi
fi
# shellcheck disable=SC2054  # the commas are qemu's option syntax
case $ACCEL_MODE in
    kvm) ACCEL=(-enable-kvm -cpu "${VM_CPU:-host}") ;;
    # One host thread per vCPU; -cpu max offers clwb/clflushopt, which the DAX flush paths use.
    tcg) ACCEL=(-accel tcg,thread=multi,tb-size=512 -cpu "${VM_CPU:-max}") ;;
    *) log "VM_ACCEL must be auto, kvm or tcg"; exit 2 ;;
esac

# no_timer_check: under emulation on a loaded host the kernel's IO-APIC timer check fails
# ("IO-APIC + timer doesn't work!") and the boot panics; the check means nothing in a VM.
# panic=1 with -no-reboot: a panic ends qemu at once (exit status 125 here).
# shellcheck disable=SC2054  # the commas are qemu's option syntax
QEMU=(qemu-system-x86_64 "${ACCEL[@]}"
    -machine pc,nvdimm=on -m "${VM_MEM:-4G},slots=2,maxmem=64G" -smp "${VM_SMP:-2}"
    -nodefaults -no-user-config -display none -no-reboot -nic none
    -kernel "$IMGDIR/vmlinuz" -initrd "$IMGDIR/initrd.img"
    -append "root=/dev/vda rw console=ttyS0,115200 panic=1 no_timer_check vmrun=1 systemd.show_status=0 ${VM_APPEND:-}"
    -drive "file=$IMGDIR/disk.raw,format=raw,if=virtio,snapshot=on,cache=unsafe"
    -object "memory-backend-file,id=pmem0,share=on,mem-path=$PMEM,size=$(stat -c %s "$PMEM"),pmem=on"
    -device nvdimm,id=nvdimm0,memdev=pmem0
    -device virtio-rng-pci
    -virtfs "local,path=$RUN,mount_tag=vmrun,security_model=none,id=vmrun"
    -device virtio-serial-pci
    -chardev "file,id=vmout,path=$RUN/output.log,append=on"
    -device virtserialport,chardev=vmout,name=vmrun.out
    -chardev "file,id=con0,path=$RUN/console.log,append=on"
    -serial chardev:con0)
if [ -n "${NVME_SIZE:-}${NVME_FILE:-}" ]; then
    NVME=${NVME_FILE:-$RUN/nvme.img}
    [ -f "$NVME" ] || truncate -s "${NVME_SIZE:-1G}" "$NVME"
    # shellcheck disable=SC2054  # the commas are qemu's option syntax
    QEMU+=(-drive "file=$NVME,format=raw,if=none,id=nvme0,cache=unsafe" -device nvme,serial=daxsmbd-nvme0,drive=nvme0)
fi
[ -z "$HOSTDIR" ] || QEMU+=(-virtfs "local,path=$(cd "$HOSTDIR" && pwd),mount_tag=host,security_model=none,id=host")

TOTAL=$((VM_TIMEOUT + VM_BOOT_TIMEOUT))
log "$GUEST guest, kernel $(cat "$IMGDIR/kernel-version" 2>/dev/null), accel $ACCEL_MODE, pmem $(stat -c %s "$PMEM") bytes ($PMEM_MODE), limit ${TOTAL}s"
T0=$SECONDS
# With pmem=on qemu warns that the backing file is not on DAX (persistence across host crashes
# is not guaranteed): harmless for tests, so qemu's own output goes to its log, shown on failure.
timeout -k 10 "$TOTAL" "${QEMU[@]}" </dev/null >"$RUN/qemu.log" 2>&1 &
QEMU_PID=$!
tail -n +1 -f --pid="$QEMU_PID" "$RUN/output.log" &
OUT_PID=$!
if [ "${VM_CONSOLE:-0}" = 1 ]; then
    tail -n +1 -f --pid="$QEMU_PID" "$RUN/console.log" >&2 &
    CON_PID=$!
fi
qrc=0
wait "$QEMU_PID" || qrc=$?
QEMU_PID=""
wait "$OUT_PID" 2>/dev/null || true
OUT_PID=""
if [ -n "$CON_PID" ]; then wait "$CON_PID" 2>/dev/null || true; CON_PID=""; fi

if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
    log "TIMEOUT: qemu killed after ${TOTAL}s; last console lines ($VM_CONSOLE_LOG):"
    tail -n 30 "$RUN/console.log" | sed 's/^/[console] /' >&2
    exit 124
fi
if [ -s "$RUN/exit-code" ]; then
    rc=$(tr -dc '0-9' <"$RUN/exit-code")
    log "guest script exit status ${rc:-?} after $((SECONDS - T0)) s"
    exit "${rc:-125}"
fi
sed 's/^/[qemu] /' "$RUN/qemu.log" >&2
log "the guest ended without reporting an exit status (qemu $qrc, $((SECONDS - T0)) s); last console lines ($VM_CONSOLE_LOG):"
tail -n 40 "$RUN/console.log" | sed 's/^/[console] /' >&2
exit 125
