# shellcheck shell=bash disable=SC2034  # variables here are read by the scripts sourcing it
# Host-side helpers of the VM tests (tests/vm/*.sh): the VM image, the daxsmbd build, and a
# staging directory that the guest sees as /host (9p) with the binaries and the shared libraries
# the guest image lacks.
#
# Environment: DAXSMBD_BUILD (default <repo>/build), VMCACHE (default ~/.cache/daxsmbd-vm),
# GUEST (bookworm), KEEP=1 keeps the staging directory; run-in-vm.sh's variables (VM_TIMEOUT,
# VM_CONSOLE=1, ...) pass through.

VM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DAXSMBD_BUILD=${DAXSMBD_BUILD:-${BUILD_DIR:-$VM_ROOT/build}}
VMCACHE=${VMCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/daxsmbd-vm}
export VMCACHE
VM_NAME=${VM_NAME:-$(basename "$0" .sh)}
VM_CONSOLE_LOG=$VMCACHE/${GUEST:-bookworm}-guest/last-console.log

vlog() { printf '[%s] %s\n' "$VM_NAME" "$*" >&2; }

# The guest image: build-image.sh builds what is missing or out of date (about 5 minutes from
# scratch) and returns in about a second when the image is up to date.
vm_ensure_image() {
    "$VM_ROOT/tests/vm/build-image.sh" >&2
}

# vm_run SCRIPT HOSTDIR: boots the guest, runs SCRIPT with HOSTDIR as /host; its exit status
# (124 timeout, 125 the guest died without one: see tests/vm/run-in-vm.sh).
vm_run() {
    "$VM_ROOT/tests/vm/run-in-vm.sh" "$@"
}

# vm_ensure_binaries [MORE-TARGETS...]: daxsmbd, daxsmbd-admin (and more) from the gcc build,
# built here when missing.
vm_ensure_binaries() {
    local t missing=0
    for t in daxsmbd daxsmbd-admin "$@"; do [ -x "$DAXSMBD_BUILD/$t" ] || missing=1; done
    if [ "$missing" = 1 ]; then
        vlog "building daxsmbd in $DAXSMBD_BUILD"
        cmake -S "$VM_ROOT" -B "$DAXSMBD_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
        ninja -C "$DAXSMBD_BUILD" -j2 daxsmbd daxsmbd-admin "$@" >&2
    fi
}

# vm_stage DIR [MORE-BINARIES...]: bin/ (daxsmbd, daxsmbd-admin, and the named build outputs),
# lib/ (every shared library they load except glibc's own, which a Debian 12 or 13 guest has in
# the same or a newer version, and libibverbs/librdmacm, which both guests have and which must
# be the guest's), and the guest scripts. Each program in bin/ is a wrapper that
# execs the binary (bin/elf/) with lib/ on its library path: only our binaries see those
# libraries, so the guest's own programs (smbclient) keep the guest's versions, which on a
# newer guest are newer than the host's.
vm_stage() {
    local dir=$1 bin lib
    shift
    mkdir -p "$dir/bin/elf" "$dir/lib"
    for bin in daxsmbd daxsmbd-admin "$@"; do
        cp "$DAXSMBD_BUILD/$bin" "$dir/bin/elf/"
        # exec: the wrapper's PID is the program's (the guest scripts signal the server by it).
        # shellcheck disable=SC2016  # expanded in the guest
        printf '#!/bin/sh\nd=$(dirname "$0")\nLD_LIBRARY_PATH=$d/../lib exec "$d/elf/%s" "$@"\n' "$bin" \
            >"$dir/bin/$bin"
        chmod 755 "$dir/bin/$bin"
    done
    for bin in "$dir"/bin/elf/*; do
        ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
            case $(basename "$lib") in
                libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) ;;
                # libibverbs dlopens its device providers (librxe, libsiw, ...) from the guest's
                # rdma-core, which must match the libibverbs that loads them: the guest's own (with
                # the libnl it was built with).
                libibverbs.so.* | librdmacm.so.* | libnl-3.so.* | libnl-route-3.so.*) ;;
                *) cp -Lu "$lib" "$dir/lib/" ;;
            esac
        done
    done
    cp "$VM_ROOT"/tests/vm/guest_*.sh "$dir/"
}
