#!/bin/bash
# Builds, or brings up to date, the guest image that tests/vm/run-in-vm.sh boots: Debian 12
# (bookworm) from debootstrap, with the kernel SMB client (cifs.ko) and the kernel SMB server
# (ksmbd.ko, with ksmbd-tools: the reference server of the SMB Direct tests) rebuilt with SMB
# Direct, soft-RoCE (rdma_rxe with rdma-core) and soft-iWARP (siw.ko, also rebuilt), ndctl for
# the emulated NVDIMM, smbclient, fio, and the tools the guest scripts use. Each stage (root file system, kernel modules, disk image) is skipped
# while its inputs, this script's text included, are unchanged, so the VM tests run it before
# every boot: up to date, it takes about a second and needs no network.
#
#   tests/vm/build-image.sh         (as root: debootstrap, chroot and mount need it; about 4-6
#                                    minutes from scratch, most of it downloads and the module
#                                    build)
#
# Environment:
#   VMCACHE         cache directory, default ~/.cache/daxsmbd-vm. The guest is built in
#                   $VMCACHE/<GUEST>-guest/ (rootfs/, image/, logs, stamps), its .deb files are
#                   kept in $VMCACHE/debs-<GUEST>/ (across FORCE=1 too)
#   GUEST           bookworm (default), or trixie: Debian 13 with the newest trixie-backports
#                   kernel (7.x), whose rdma_rxe supports On-Demand Paging (an RDMA memory region
#                   over an mmap of a file on a DAX file system); its own directory and image
#   FORCE=1         rebuild every stage (the .deb files are reused)
#   EXTRA_PACKAGES  more guest packages, space separated
#   IMG_SIZE        size of the sparse root disk (4G)
# Output: $VMCACHE/<GUEST>-guest/image/: disk.raw (ext4 without a partition table,
# root=/dev/vda), vmlinuz, initrd.img, kernel-version, packages.txt (every package version).
#
# The Debian mirror comes from the host's apt configuration (apt-get indextargets), so the
# script names no mirror host; the guest's apt sources are emptied at the end (it has no network).
set -euo pipefail

GUEST=${GUEST:-bookworm}
case $GUEST in
    bookworm | trixie) ;;
    *)
        echo "build-image: GUEST must be bookworm or trixie" >&2
        exit 2
        ;;
esac
VMCACHE=${VMCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/daxsmbd-vm}
GDIR=$VMCACHE/$GUEST-guest
ROOTFS=$GDIR/rootfs
IMGDIR=$GDIR/image
DEBS=$VMCACHE/debs-$GUEST
IMG_SIZE=${IMG_SIZE:-4G}

PACKAGES=(
    linux-image-amd64 initramfs-tools systemd-sysv udev kmod dbus
    cifs-utils keyutils smbclient                               # the SMB clients
    rdma-core ibverbs-providers ibverbs-utils rdmacm-utils      # soft-RoCE (rxe) from user space
    ndctl daxctl                                                # NVDIMM namespaces (fsdax)
    e2fsprogs xfsprogs fio                                      # DAX file systems, local I/O
    iproute2 procps psmisc util-linux python3-minimal strace    # what the guest scripts call
    ksmbd-tools                                                 # ksmbd's user-space daemon
)
# bookworm's own ksmbd-tools (3.4.7) cannot serve a share with bookworm's current 6.1 kernel:
# the kernel's stricter checking of the daemon's replies (ipc_validate_msg) rejects them, so
# every tree connect fails (the client sees BAD_NETWORK_NAME). The 3.5.x of bookworm-backports
# works, as does trixie's own 3.5.x.
[ "$GUEST" = bookworm ] && PACKAGES=("${PACKAGES[@]/#ksmbd-tools/ksmbd-tools/bookworm-backports}")
if [ "$GUEST" = trixie ]; then
    # The 7.x kernel is only in trixie-backports. Its packages install the kernel as
    # /usr/lib/modules/<version>/vmlinuz; only the linux-base of trixie-backports has the hook
    # that copies it (and config) to /boot, where the image stage takes them from.
    PACKAGES=("${PACKAGES[@]/#linux-image-amd64/linux-image-amd64/trixie-backports}"
        linux-base/trixie-backports)
fi
# shellcheck disable=SC2206  # a space-separated list on purpose
[ -z "${EXTRA_PACKAGES:-}" ] || PACKAGES+=($EXTRA_PACKAGES)

log() { printf '[build-image] %s\n' "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}
[ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot and mount need it)"
for tool in debootstrap mkfs.ext4; do
    command -v "$tool" >/dev/null || die "$tool is missing (.ci/install-deps.sh installs it)"
done

mkdir -p "$GDIR" "$DEBS"
# Two VM tests started at once must not build the same rootfs twice at the same time.
exec 9>"$GDIR/build.lock"
flock 9

# ---------------------------------------------------------------- mirrors
# The first site the host's apt configuration uses for RELEASE's main component.
apt_site() {
    # shellcheck disable=SC2016  # $(SITE) etc. are apt's placeholders, not shell
    apt-get indextargets --format '$(SITE) $(RELEASE) $(COMPONENT) $(TARGET_OF)' 2>/dev/null |
        awk -v r="$1" '$2 == r && $3 == "main" && $4 == "deb" { print $1; exit }'
}

SOURCES=""
MIRROR=""
# The guest's sources.list: the suite, its updates and security, and backports (the trixie
# kernel). A host that names only its own release (bookworm) serves trixie from the same sites.
detect_mirrors() {
    [ -z "$SOURCES" ] || return 0
    local rel=$GUEST main upd sec
    if [ -z "$(apt_site "$GUEST")" ]; then
        # shellcheck disable=SC2016
        rel=$(apt-get indextargets --format '$(RELEASE) $(COMPONENT) $(TARGET_OF)' 2>/dev/null |
            awk '$1 !~ /-/ && $2 == "main" && $3 == "deb" { print $1; exit }')
    fi
    main=$(apt_site "$rel")
    [ -n "$main" ] || die "the host's apt configuration has no Debian main source"
    upd=$(apt_site "$rel-updates")
    sec=$(apt_site "$rel-security")
    SOURCES="deb $main $GUEST main
deb $main $GUEST-backports main${upd:+
deb $upd $GUEST-updates main}${sec:+
deb $sec $GUEST-security main}"
    MIRROR=$main
    log "mirrors from the host's apt configuration ($rel): $(echo "$SOURCES" | awk '{print $3}' | tr '\n' ' ')"
}

# ---------------------------------------------------------------- chroot
MOUNTS=()
ENTERED=0
chroot_enter() { # mounts what apt and the module build need; sources and no-daemon policy
    local m
    ENTERED=1
    printf '%s\n' "$SOURCES" >"$ROOTFS/etc/apt/sources.list"
    # Package scripts must not start daemons in the chroot (they would outlive it).
    printf '#!/bin/sh\nexit 101\n' >"$ROOTFS/usr/sbin/policy-rc.d"
    chmod 755 "$ROOTFS/usr/sbin/policy-rc.d"
    mkdir -p "$ROOTFS/var/cache/apt/archives"
    mount -t proc proc "$ROOTFS/proc" && MOUNTS+=("$ROOTFS/proc")
    mount -t sysfs sysfs "$ROOTFS/sys" && MOUNTS+=("$ROOTFS/sys")
    for m in dev dev/pts; do mount --bind "/$m" "$ROOTFS/$m" && MOUNTS+=("$ROOTFS/$m"); done
    mount --bind "$DEBS" "$ROOTFS/var/cache/apt/archives" && MOUNTS+=("$ROOTFS/var/cache/apt/archives")
}
chroot_leave() { # unmounts in reverse order; the guest gets no apt sources (it has no network)
    local i
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}" 2>/dev/null || true
    done
    MOUNTS=()
    [ "$ENTERED" = 1 ] || return 0
    ENTERED=0
    echo "# emptied by tests/vm/build-image.sh: the test guest has no network" >"$ROOTFS/etc/apt/sources.list"
    rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS/usr/sbin/policy-rc.d"
}
trap chroot_leave EXIT
# An interrupted earlier run may have left mounts: mkfs -d would copy /proc into the image.
umount_stale() {
    local m
    for m in var/cache/apt/archives dev/pts dev sys proc; do
        if mountpoint -q "$ROOTFS/$m" 2>/dev/null; then umount -l "$ROOTFS/$m" || true; fi
    done
}
in_chroot() { LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive chroot "$ROOTFS" "$@"; }
# in_chroot_log LOG CMD...: CMD in the chroot, output appended to LOG; its tail on failure.
in_chroot_log() {
    local lg=$1
    shift
    if ! in_chroot "$@" >>"$lg" 2>&1; then
        tail -n 30 "$lg" >&2
        die "failed in the chroot: $* (log: $lg)"
    fi
}
kernel_version() { find "$ROOTFS/lib/modules/" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n 1; }

# ---------------------------------------------------------------- stages
stage_rootfs() {
    local lg=$GDIR/rootfs.log
    detect_mirrors
    : >"$lg"
    rm -rf "$ROOTFS"
    debootstrap --variant=minbase --arch=amd64 --cache-dir="$DEBS" "$GUEST" "$ROOTFS" "$MIRROR" \
        >>"$lg" 2>&1 || {
        tail -n 30 "$lg" >&2
        die "debootstrap failed (log: $lg)"
    }
    chroot_enter
    in_chroot_log "$lg" apt-get update -q
    # Point releases since the debootstrap snapshot, so that the kernel's headers and source
    # (module stage) exist in the image's kernel version.
    in_chroot_log "$lg" apt-get dist-upgrade -y -q
    in_chroot_log "$lg" apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
    chroot_leave
}

# Debian's kernels are built without CONFIG_CIFS_SMB_DIRECT and CONFIG_SMB_SERVER_SMBDIRECT
# (bookworm's 6.1 and the 6.12 and 7.x of the backports alike), so neither `mount -t cifs -o
# rdma` nor ksmbd's SMB Direct listener work with the stock modules; soft-iWARP (RDMA_SIW) is
# off as well. Rebuild cifs.ko, ksmbd.ko and siw.ko out of tree from Debian's own linux-source
# of the same version, against the matching linux-headers, with only those switches turned on;
# depmod prefers updates/ over kernel/. The modules are unsigned: loading them taints the kernel
# (OE), which changes nothing here. siw.ko is optional: when it does not build, the image has
# none and the tests that need it skip.
stage_modules() {
    local lg=$GDIR/modules.log kver mm ver cc src=/usr/src/daxsmbd-modules dst m extra=
    detect_mirrors
    : >"$lg"
    kver=$(kernel_version)
    mm=$(cut -d. -f1,2 <<<"$kver")
    # shellcheck disable=SC2016  # dpkg-query's format, not shell
    ver=$(in_chroot dpkg-query -W -f '${Version}' "linux-image-$kver")
    # The compiler the kernel was built with (its config names it: gcc-12 on bookworm,
    # x86_64-linux-gnu-gcc-14 on trixie).
    cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^ ]*\) .*/\1/p' "$ROOTFS/boot/config-$kver")
    [ -n "$cc" ] || die "no CONFIG_CC_VERSION_TEXT in the kernel's config"
    chroot_enter
    in_chroot_log "$lg" apt-get update -q
    in_chroot_log "$lg" apt-get install -y -q --no-install-recommends "linux-headers-$kver=$ver" \
        "linux-source-$mm=$ver" make xz-utils libc6-dev
    rm -rf "${ROOTFS:?}$src"
    mkdir -p "$ROOTFS$src"
    local want=(fs/smb scripts/asn1_compiler.c include/linux/asn1.h include/linux/asn1_ber_bytecode.h
        fs/internal.h drivers/infiniband/sw/siw)
    # 7.x: the cifs sources include two nls headers, and the rxe fix below needs rxe's sources.
    [ "$GUEST" = trixie ] && want+=(fs/nls/nls_ucs2_utils.h fs/nls/nls_ucs2_data.h drivers/infiniband/sw/rxe)
    tar -C "$ROOTFS$src" -xJf "$ROOTFS/usr/src/linux-source-$mm.tar.xz" --strip-components=1 \
        "${want[@]/#/linux-source-$mm/}" >>"$lg" 2>&1 || die "cannot unpack linux-source-$mm (log: $lg)"
    # Debian's kbuild package has no scripts/asn1_compiler: build it from the same source and
    # generate the parsers cifs and ksmbd need (make then finds them up to date).
    in_chroot_log "$lg" sh -c "cd $src && $cc -O2 -Iinclude -o asn1_compiler scripts/asn1_compiler.c &&
        for f in fs/smb/client/*.asn1 fs/smb/server/*.asn1; do ./asn1_compiler \$f \$f.c \$f.h || exit 1; done"
    [ "$GUEST" = trixie ] && patch_rxe_odp "$ROOTFS$src/drivers/infiniband/sw/rxe/rxe_odp.c"
    patch_ksmbd "$ROOTFS$src/fs/smb/server"
    local kb
    kb="make -C /lib/modules/$kver/build -j$(nproc)"
    # 7.x moved the SMB Direct transport into a module of its own (fs/smb/smbdirect,
    # CONFIG_SMBDIRECT, also off in Debian's config); cifs.ko links against its exports.
    if [ -d "$ROOTFS$src/fs/smb/smbdirect" ]; then
        in_chroot_log "$lg" sh -c "$kb M=$src/fs/smb/smbdirect CONFIG_SMBDIRECT=m modules"
        extra="KBUILD_EXTRA_SYMBOLS=$src/fs/smb/smbdirect/Module.symvers"
    fi
    # The config's autoconf.h lacks the switch: the C code sees it through KCFLAGS, the
    # Makefile (which adds smbdirect.o) through the make variable.
    in_chroot_log "$lg" sh -c "$kb M=$src/fs/smb/client CONFIG_CIFS=m CONFIG_CIFS_SMB_DIRECT=y \
        KCFLAGS=-DCONFIG_CIFS_SMB_DIRECT=1 $extra modules"
    in_chroot_log "$lg" sh -c "$kb M=$src/fs/smb/server CONFIG_SMB_SERVER=m CONFIG_SMB_SERVER_SMBDIRECT=y \
        KCFLAGS=-DCONFIG_SMB_SERVER_SMBDIRECT=1 $extra modules"
    [ "$GUEST" = trixie ] && in_chroot_log "$lg" sh -c "$kb M=$src/drivers/infiniband/sw/rxe CONFIG_RDMA_RXE=m modules"
    if ! in_chroot sh -c "$kb M=$src/drivers/infiniband/sw/siw CONFIG_RDMA_SIW=m modules" >>"$lg" 2>&1; then
        log "WARNING: siw.ko did not build (optional: the image has no soft-iWARP; log: $lg)"
    fi
    dst=/lib/modules/$kver/updates/daxsmbd-vm
    rm -rf "${ROOTFS:?}$dst"
    mkdir -p "$ROOTFS$dst"
    for m in fs/smb/smbdirect/smbdirect.ko fs/smb/client/cifs.ko fs/smb/server/ksmbd.ko \
        drivers/infiniband/sw/siw/siw.ko drivers/infiniband/sw/rxe/rdma_rxe.ko; do
        if [ -f "$ROOTFS$src/$m" ]; then cp "$ROOTFS$src/$m" "$ROOTFS$dst/"; fi
    done
    in_chroot_log "$lg" sh -c "strip --strip-debug $dst/*.ko && depmod -a $kver"
    # The source tree is 150 MB the guest does not need.
    in_chroot_log "$lg" apt-get purge -y -q "linux-source-$mm"
    rm -rf "${ROOTFS:?}$src"
    chroot_leave
    log "rebuilt $(cd "$ROOTFS$dst" && echo *.ko) for $kver -> $dst"
}

# rdma_rxe's On-Demand Paging (6.14/6.15 on, still in 7.3.4): __rxe_odp_mr_copy() copies to or
# from the start of each page of the memory region, ignoring the address's offset in the page,
# and does not advance its buffer from one page to the next. Every access that does not start on
# a page boundary hits the wrong bytes while the work completion reports success (at RDMA MTU
# 1024, rxe on a 1500-byte netdev, three of the four packets of every page). Add the offset and
# advance the buffer; only where the old lines are there.
patch_rxe_odp() {
    local f=$1
    grep -q '? addr : user_va;' "$f" || return 0
    perl -0pi -e 's/\? addr : user_va;/? addr : user_va + offset;/;
        s/\? user_va : addr;/? user_va + offset : addr;/;
        s/(\n\t\tlength  -= bytes;\n)(\t\tidx\+\+;\n)/$1\t\taddr += bytes;\n$2/' "$f"
    if ! grep -q '? user_va + offset : addr;' "$f" || ! grep -q 'addr += bytes;' "$f"; then
        die "the rdma_rxe ODP fix no longer applies to $f"
    fi
    log "patched rdma_rxe: the ODP copy honours the page offset and advances its buffer"
}

# Two bugs of the ksmbd in bookworm's 6.1.19x, both from stable backports that took a caller's
# change without the callee's (mainline has both fixes; 7.x needs neither, and each fix is
# applied only where its bug is there):
#   - smb2_open() now calls opinfo_put() with NULL when no oplock or lease was granted, but
#     opinfo_put() has no NULL check: a NULL dereference (opinfo_put+0x5) on the first open of
#     nearly every kernel-client mount. Give it mainline's check.
#   - ksmbd_close_fd() clears fp->volatile_id before the last reference goes, and
#     __ksmbd_remove_fd() returns early on a cleared id before unlinking fp from the inode's list
#     of opens: the freed handle stays listed, and the next open of the file with another handle
#     still open corrupts the list (list_add corruption, a BUG in smb2_open; smbtorture's smb2
#     suites hit it at once). Unlink first, then return early, as mainline does.
patch_ksmbd() {
    local dir=$1 f
    f=$dir/oplock.c
    if grep -A2 '^void opinfo_put(struct oplock_info \*opinfo)$' "$f" | grep -q 'atomic_dec_and_test'; then
        perl -0pi -e 's/(\nvoid opinfo_put\(struct oplock_info \*opinfo\)\n\{\n)/$1\tif (!opinfo)\n\t\treturn;\n/' "$f"
        grep -A3 '^void opinfo_put(struct oplock_info \*opinfo)$' "$f" | grep -q 'if (!opinfo)' ||
            die "the ksmbd opinfo_put() fix no longer applies to $f"
        log "patched ksmbd: opinfo_put() ignores NULL"
    fi
    f=$dir/vfs_cache.c
    if grep -A3 '^static void __ksmbd_remove_fd(' "$f" | grep -q 'if (!has_file_id(fp->volatile_id))'; then
        # Move the early return below the list_del_init() block.
        perl -0pi -e 's/(__ksmbd_remove_fd\([^)]*\)\n\{\n)(\tif \(!has_file_id\(fp->volatile_id\)\)\n\t\treturn;\n\n)(\twrite_lock\(&fp->f_ci->m_lock\);\n\tlist_del_init\(&fp->node\);\n\twrite_unlock\(&fp->f_ci->m_lock\);\n\n)/$1$3$2/' "$f"
        grep -A3 '^static void __ksmbd_remove_fd(' "$f" | grep -q 'if (!has_file_id(fp->volatile_id))' &&
            die "the ksmbd __ksmbd_remove_fd() fix no longer applies to $f"
        log "patched ksmbd: __ksmbd_remove_fd() unlinks the handle before its early return"
    fi
    return 0
}

# What turns the root file system into a test guest. Re-applied whenever the image is made.
customize() {
    local r=$ROOTFS u
    echo vmtest >"$r/etc/hostname"
    printf '127.0.0.1\tlocalhost\n127.0.1.1\tvmtest\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$r/etc/hosts"
    printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\ntmpfs /tmp tmpfs mode=1777,size=1G 0 0\n' >"$r/etc/fstab"
    chroot "$r" passwd -d root >/dev/null # a console login needs no password
    mkdir -p "$r/etc/systemd/journald.conf.d" "$r/etc/systemd/system/multi-user.target.wants"
    printf '[Journal]\nStorage=volatile\nForwardToConsole=no\n' >"$r/etc/systemd/journald.conf.d/vm.conf"
    # Timers and services that only cost boot time in a throw-away guest without network; ksmbd
    # is started by the tests that want it, with their own configuration.
    for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
        fstrim.timer systemd-timesyncd.service ndctl-monitor.service ksmbd.service; do
        ln -sfn /dev/null "$r/etc/systemd/system/$u"
    done
    # The boot hook: mounts the run's 9p share and hands over to the runner run-in-vm.sh put
    # there (tests/vm/runner-guest.sh), so the runner's changes need no new image.
    cat >"$r/usr/local/sbin/vmrun-boot" <<'EOF'
#!/bin/sh
# Written by tests/vm/build-image.sh: runs the guest half of tests/vm/run-in-vm.sh.
modprobe -q 9pnet_virtio 2>/dev/null
modprobe -q 9p 2>/dev/null
mkdir -p /vmrun
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none vmrun /vmrun || exit 0
exec /bin/bash /vmrun/runner-guest.sh
EOF
    chmod 755 "$r/usr/local/sbin/vmrun-boot"
    # After multi-user.target: the script finds the system as a test expects it. LimitMEMLOCK:
    # RDMA memory registrations pin memory.
    cat >"$r/etc/systemd/system/vmrun.service" <<'EOF'
[Unit]
Description=Run the script of tests/vm/run-in-vm.sh
After=multi-user.target
ConditionKernelCommandLine=vmrun=1

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/vmrun-boot
StandardInput=null
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity
LimitMEMLOCK=infinity

[Install]
WantedBy=multi-user.target
EOF
    ln -sfn /etc/systemd/system/vmrun.service "$r/etc/systemd/system/multi-user.target.wants/vmrun.service"
}

stage_image() {
    local kver tmp=$IMGDIR/disk.raw.tmp
    customize
    kver=$(kernel_version)
    [ -f "$ROOTFS/boot/vmlinuz-$kver" ] || die "no kernel /boot/vmlinuz-$kver in the rootfs"
    # shellcheck disable=SC2016  # dpkg-query's format, not shell
    in_chroot dpkg-query -W -f '${Package} ${Version}\n' >"$GDIR/packages.txt"
    mkdir -p "$IMGDIR"
    rm -f "$tmp"
    truncate -s "$IMG_SIZE" "$tmp"
    mkfs.ext4 -q -F -L vmroot -d "$ROOTFS" "$tmp"
    # A new file (not rewritten in place): a qemu still running from the old image keeps it.
    mv -f "$tmp" "$IMGDIR/disk.raw"
    cp -f "$ROOTFS/boot/vmlinuz-$kver" "$IMGDIR/vmlinuz"
    cp -f "$ROOTFS/boot/initrd.img-$kver" "$IMGDIR/initrd.img"
    echo "$kver" >"$IMGDIR/kernel-version"
    cp -f "$GDIR/packages.txt" "$IMGDIR/packages.txt"
}

# ---------------------------------------------------------------- main
hash_of() { sha256sum | cut -c1-16; }
# run_stage NAME HASH FUNCTION: FUNCTION unless NAME's stamp holds HASH; a stage that runs
# invalidates the stamps of the stages after it.
STAGES=(rootfs modules image)
run_stage() {
    local name=$1 hash=$2 fn=$3 t0 s later=0
    if [ "$(cat "$GDIR/$name.stamp" 2>/dev/null)" = "$hash" ]; then return 0; fi
    for s in "${STAGES[@]}"; do
        [ "$s" = "$name" ] && later=1
        [ "$later" = 1 ] && rm -f "$GDIR/$s.stamp"
    done
    log "== $name ($GUEST)"
    t0=$SECONDS
    umount_stale
    "$fn"
    echo "$hash" >"$GDIR/$name.stamp"
    log "== $name done in $((SECONDS - t0)) s"
}

[ "${FORCE:-0}" != 1 ] || rm -f "$GDIR"/*.stamp
T0=$SECONDS
h_rootfs=$(printf '%s\n' "$GUEST" "${PACKAGES[@]}" "$(declare -f stage_rootfs)" | hash_of)
h_modules=$(printf '%s\n' "$h_rootfs" "$(declare -f stage_modules patch_rxe_odp patch_ksmbd)" | hash_of)
h_image=$(printf '%s\n' "$h_modules" "$IMG_SIZE" "$(declare -f customize stage_image)" | hash_of)
[ -d "$ROOTFS/usr" ] || rm -f "$GDIR"/*.stamp
[ -f "$IMGDIR/disk.raw" ] || rm -f "$GDIR/image.stamp"
run_stage rootfs "$h_rootfs" stage_rootfs
run_stage modules "$h_modules" stage_modules
run_stage image "$h_image" stage_image
if [ $((SECONDS - T0)) -gt 2 ]; then
    log "image $IMGDIR/disk.raw, kernel $(cat "$IMGDIR/kernel-version"), $((SECONDS - T0)) s"
fi
