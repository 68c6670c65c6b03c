#!/bin/bash
# Guest half of tests/vm/run.sh (runs as root inside the VM).
set -u
. "${VMRUN_HOST:-/host}/guest_common.sh"

mkdir -p /srv/plain /tmp/src
chmod 777 /srv/plain
head -c $((4 << 20)) /dev/urandom >/tmp/src/big.bin    # page multiple: all of it DAX
head -c $((3 << 20)) /dev/urandom >/tmp/src/plain.bin
head -c 100000 /dev/urandom >/tmp/src/odd.bin          # partial last page: falls back in part
echo "guest: $(uname -r), CPU flags: $(grep -o -w -E 'clwb|clflushopt|clflush' /proc/cpuinfo | sort -u | tr '\n' ' ')"

CONF="[global]
smb ports = $PORT
interfaces = 127.0.0.1
user database = /tmp/users.db
log level = 1
[dax]
path = /mnt/pmem/share
read only = no
dax = on
continuous availability = yes
[plain]
path = /srv/plain
read only = no
dax = auto"

# The [dax] share is continuously available: its persistent handle journal is a MAP_SYNC
# mapping on the NVDIMM. A file held open by the kernel client (on /mnt/cifs) survives a SIGKILL
# and restart of the server: the new server restores the handle, the client reconnects it and
# goes on writing through the same descriptor.
persistent_handle_survives_restart() {
    local fs=$1
    check "$fs: the persistent handle journal is mapped on the NVDIMM" \
        grep -q 'persistent handles in /mnt/pmem/share/.daxsmbd/persistent-handles.pmem (mapped)' "$SLOG"
    exec 9<>/mnt/cifs/held.bin
    printf 'before the restart\n' >&9
    kill -KILL "$SPID"
    wait "$SPID" 2>/dev/null
    SPID=
    if ! server_start "$fs-restarted" "$CONF"; then
        bad "$fs: server restart after SIGKILL"
        exec 9>&-
        return
    fi
    check "$fs: the restarted server restored the persistent handle" \
        grep -q '1 persistent handles restored' "$SLOG"
    timeout 60 sh -c 'printf "after the restart\n" >&9' || bad "$fs: write through the held descriptor"
    exec 9>&-
    check "$fs: the client reconnected the persistent handle" \
        grep -q "durable handle 'held.bin' reconnected (v2)" "$SLOG"
    check "$fs: the held file has both writes" \
        test "$(cat /mnt/pmem/share/held.bin)" = "$(printf 'before the restart\nafter the restart')"
    rm -f /mnt/cifs/held.bin
}

for fs in ext4 xfs; do
    echo "== $fs -o dax"
    pmem_mount "$fs" /mnt/pmem
    mkdir -p /mnt/pmem/share && chmod 777 /mnt/pmem/share
    check "$fs: mounted with dax" grep -q "/mnt/pmem $fs .*dax" /proc/mounts
    server_start "$fs" "$CONF" || {
        bad "$fs: server start"
        continue
    }
    check "$fs: share [dax] uses DAX" grep -q 'share \[dax\]: DAX active' "$SLOG"
    check "$fs: share [plain] stays on the block path" grep -q 'share \[plain\]: dax = auto: not a DAX file system' "$SLOG"

    # smbclient: put, get back, compare (client and server side).
    r0=$(dax_stat reads)
    w0=$(dax_stat writes)
    check "$fs: smbclient put 4 MiB" smb dax "put /tmp/src/big.bin big.bin"
    check "$fs: smbclient get" smb dax "get big.bin /tmp/big.get"
    check "$fs: smbclient sha256 round trip" same_sha /tmp/src/big.bin /tmp/big.get
    check "$fs: server-side file sha256" same_sha /tmp/src/big.bin /mnt/pmem/share/big.bin
    check "$fs: smbclient odd-sized file" smb dax "put /tmp/src/odd.bin odd.bin; get odd.bin /tmp/odd.get"
    check "$fs: odd-sized sha256" same_sha /tmp/src/odd.bin /tmp/odd.get
    w1=$(dax_stat writes)
    r1=$(dax_stat reads)
    check "$fs: DAX served the smbclient writes ($w0 -> $w1)" test "$w1" -gt "$w0"
    check "$fs: DAX served the smbclient reads ($r0 -> $r1)" test "$r1" -gt "$r0"

    # Kernel client, cache=none: every read and write goes to the server.
    if cifs_mount dax /mnt/cifs; then
        ok "$fs: kernel client mounted //127.0.0.1/dax"
        check "$fs: kernel cp 4 MiB" cp /tmp/src/big.bin /mnt/cifs/k.bin
        check "$fs: kernel write-through dd" dd if=/tmp/src/big.bin of=/mnt/cifs/wt.bin bs=64k oflag=sync status=none
        check "$fs: kernel read back sha256" same_sha /tmp/src/big.bin /mnt/cifs/k.bin
        check "$fs: kernel write-through read back" same_sha /tmp/src/big.bin /mnt/cifs/wt.bin
        check "$fs: server-side sha256 (kernel)" same_sha /tmp/src/big.bin /mnt/pmem/share/k.bin
        check "$fs: kernel truncate + rewrite" sh -c "truncate -s 4096 /mnt/cifs/k.bin && cp /tmp/src/big.bin /mnt/cifs/k.bin && cmp /tmp/src/big.bin /mnt/cifs/k.bin"
        check "$fs: kernel rm" rm /mnt/cifs/k.bin /mnt/cifs/wt.bin
        umount /mnt/cifs
    else
        bad "$fs: kernel client mount"
        dmesg | tail -5
    fi
    w2=$(dax_stat writes)
    r2=$(dax_stat reads)
    p2=$(dax_stat persists)
    echo "   $(grep -o 'dax: .*' "$SLOG" | tail -1)"
    check "$fs: DAX served the kernel client's writes ($w1 -> $w2)" test "$w2" -gt "$w1"
    check "$fs: DAX served the kernel client's reads ($r1 -> $r2)" test "$r2" -gt "$r1"
    check "$fs: write-through and FLUSH/CLOSE persisted ($p2)" test "$p2" -gt 0
    check "$fs: no media errors" test "$(dax_stat media_errors)" = 0

    # The first kernel-client interop test: a plain share (block path), once.
    if [ "$fs" = ext4 ]; then
        if cifs_mount plain /mnt/plain; then
            ok "plain: kernel client mounted //127.0.0.1/plain"
            check "plain: mkdir" mkdir /mnt/plain/dir
            check "plain: cp 3 MiB" cp /tmp/src/plain.bin /mnt/plain/dir/p.bin
            check "plain: read back sha256" same_sha /tmp/src/plain.bin /mnt/plain/dir/p.bin
            check "plain: server-side sha256" same_sha /tmp/src/plain.bin /srv/plain/dir/p.bin
            # The server acts as the user's Unix account on disk (README "Identity").
            check "plain: the kernel client's file and directory are $USER_NAME's on disk" \
                test "$(stat -c %U:%G /srv/plain/dir/p.bin /srv/plain/dir | sort -u)" = \
                "$USER_NAME:$USER_NAME"
            check "plain: ls shows the file" sh -c "ls /mnt/plain/dir | grep -qx p.bin"
            check "plain: rm" rm /mnt/plain/dir/p.bin
            check "plain: ls empty" test -z "$(ls /mnt/plain/dir)"
            check "plain: rmdir" rmdir /mnt/plain/dir
            umount /mnt/plain
        else
            bad "plain: kernel client mount"
            dmesg | tail -5
        fi
    fi
    server_stop
    check "$fs: shutdown stats line" grep -q 'dax: reads=[1-9]' "$SLOG"
    check "$fs: server survived (no crash)" sh -c "! grep -q -E 'Segmentation|Bus error|AddressSanitizer' '$SLOG'"
    if [ "$fs" = ext4 ] && server_start "$fs-persistent" "$CONF"; then
        if cifs_mount dax /mnt/cifs; then
            persistent_handle_survives_restart "$fs"
            # The client may still be closing the reconnected handle (deferred close).
            umount /mnt/cifs || { sleep 3; umount /mnt/cifs; } || umount -l /mnt/cifs
        else
            bad "$fs: kernel client mount for the persistent handle"
        fi
        server_stop
        check "$fs: restarted server survived (no crash)" sh -c "! grep -q -E 'Segmentation|Bus error|AddressSanitizer' '$SLOG'"
    fi
    umount /mnt/pmem
done

# Device health (README "Metrics"): a share on the emulated NVMe disk (run.sh attaches one,
# NVME_SIZE) has its SMART / Health log in the metrics, and the controller's write counters
# grow when a client writes.
metric() { # NAME LABELS: the value of one sample from GET /metrics
    local body
    exec 7<>/dev/tcp/127.0.0.1/9922 || return 1
    printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&7
    body=$(cat <&7)
    exec 7>&-
    grep -F "$1{$2} " <<<"$body" | awk '{print $2}'
}
if [ -b /dev/nvme0n1 ]; then
    echo "== NVMe device health"
    mkfs.ext4 -q -F /dev/nvme0n1
    mkdir -p /mnt/nvme
    mount /dev/nvme0n1 /mnt/nvme
    mkdir -p /mnt/nvme/share && chmod 777 /mnt/nvme/share
    if server_start nvme "[global]
smb ports = $PORT
interfaces = 127.0.0.1
user database = /tmp/users.db
metrics address = 127.0.0.1:9922
device health interval = 1
[nvme]
path = /mnt/nvme/share
read only = no"; then
        check "nvme: the share's device is nvme0n1, read as NVMe" \
            test "$(metric daxsmbd_share_device_info 'share="nvme",device="nvme0n1",type="nvme"')" = 1
        check "nvme: no critical warning" \
            test "$(metric daxsmbd_nvme_critical_warning 'device="nvme0n1"')" = 0
        t=$(metric daxsmbd_nvme_temperature_kelvin 'device="nvme0n1"')
        check "nvme: a temperature is reported ($t K)" test "${t:-0}" -gt 200
        w0=$(metric daxsmbd_nvme_host_write_commands_total 'device="nvme0n1"')
        u0=$(metric daxsmbd_nvme_data_units_written_total 'device="nvme0n1"')
        check "nvme: smbclient writes 4 MiB" smb nvme "put /tmp/src/big.bin big.bin"
        sync
        sleep 2.5 # two reads of the log at "device health interval = 1"
        w1=$(metric daxsmbd_nvme_host_write_commands_total 'device="nvme0n1"')
        u1=$(metric daxsmbd_nvme_data_units_written_total 'device="nvme0n1"')
        check "nvme: host write commands grew ($w0 -> $w1)" test "${w1:-0}" -gt "${w0:-0}"
        check "nvme: data units written grew ($u0 -> $u1)" test "${u1:-0}" -gt "${u0:-0}"
        check "nvme: no failed log reads" \
            test "$(metric daxsmbd_nvme_health_read_failures_total 'device="nvme0n1"')" = 0
        server_stop
    else
        bad "nvme: server start"
    fi
    umount /mnt/nvme
else
    bad "nvme: no /dev/nvme0n1 (run.sh attaches it with NVME_SIZE)"
fi

# Persistent memory health (README "Device health"): the DAX share's pmem device, its region
# and DIMM appear in the metrics; a bad block the test adds through the kernel's badblocks
# attribute (block/genhd.c) shows up at the next read and is logged once.
echo "== pmem device health"
pmem_mount ext4 /mnt/pmem
mkdir -p /mnt/pmem/share && chmod 777 /mnt/pmem/share
if server_start pmem "[global]
smb ports = $PORT
interfaces = 127.0.0.1
user database = /tmp/users.db
metrics address = 127.0.0.1:9922
device health interval = 1
[dax]
path = /mnt/pmem/share
read only = no
dax = on"; then
    check "pmem: the share's device is pmem0, read as persistent memory" \
        test "$(metric daxsmbd_share_device_info 'share="dax",device="pmem0",type="pmem"')" = 1
    check "pmem: no bad blocks" test "$(metric daxsmbd_pmem_bad_sectors 'device="pmem0"')" = 0
    check "pmem: region0 is writable" \
        test "$(metric daxsmbd_pmem_region_read_only 'device="pmem0",region="region0"')" = 0
    id=$(cat /sys/bus/nd/devices/nmem0/nfit/id 2>/dev/null)
    check "pmem: its DIMM nmem0 ($id) is listed, no failure flag" \
        test "$(metric daxsmbd_nvdimm_info "device=\"pmem0\",dimm=\"nmem0\",id=\"$id\",failed=\"no\"")" = 1
    # Eight sectors near the end, away from what the file system wrote so far.
    sectors=$(blockdev --getsz /dev/pmem0)
    check "pmem: a bad block is added to pmem0" sh -c "echo '$((sectors - 64)) 8' >/sys/block/pmem0/badblocks"
    sleep 2.5 # two reads at "device health interval = 1"
    check "pmem: the metrics count its 8 sectors" \
        test "$(metric daxsmbd_pmem_bad_sectors 'device="pmem0"')" = 8
    check "pmem: one warning is logged" \
        test "$(grep -c 'WARNING: device /dev/pmem0 (\[dax\]): persistent memory 1 bad range (8 sectors)' "$SLOG")" = 1
    check "pmem: no failed health reads" \
        test "$(metric daxsmbd_pmem_health_read_failures_total 'device="pmem0"')" = 0
    server_stop
else
    bad "pmem: server start"
fi
umount /mnt/pmem

# dax = on where there is no DAX: the server must refuse to start.
CONF_BAD="[global]
smb ports = $PORT
user database = /tmp/users.db
[bad]
path = /srv/plain
read only = no
dax = on"
printf '%s\n' "$CONF_BAD" >/tmp/bad.conf
if "$DAXSMBD" -s /tmp/bad.conf -F >/tmp/bad.log 2>&1; then bad "dax = on on a non-DAX file system refused"; else
    check "dax = on on a non-DAX file system refused" grep -q "not DAX-capable" /tmp/bad.log
fi
finish
