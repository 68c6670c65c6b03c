#!/bin/bash
# Guest half of tests/vm/smbdirect.sh (runs as root inside the VM): SMB Direct with the Linux
# kernel client over soft-RoCE (rdma_rxe) and soft-iWARP (siw), first against ksmbd (the
# reference: proves the harness), then against daxsmbd. Settings come from /host/smbdirect.env:
#   SD_SERVERS   which servers, in this order (ksmbd daxsmbd)
#   SD_KSMBD     core: ksmbd gets the core check only; full: every scenario, as daxsmbd
#   SD_SIZE_MB   size of the main test file (32); the other scenarios use a quarter of it
#   SD_READS     back-to-back 64 KiB reads (2000)
# Every step has a time limit (STEP_TIMEOUT, 60 s; data transfers 180 s), so a hung client costs
# a minute, not the whole run.
set -u
. "${VMRUN_HOST:-/host}/guest_common.sh"
. "$H/guest_rdma_common.sh"
# shellcheck disable=SC1091  # written by smbdirect.sh
[ -f "$H/smbdirect.env" ] && . "$H/smbdirect.env"
SERVERS=${SD_SERVERS:-ksmbd daxsmbd}
KSMBD_SUITE=${SD_KSMBD:-core}
MB=${SD_SIZE_MB:-32}
READS=${SD_READS:-2000}
SRC=/tmp/src/d.bin
SMALL=/tmp/src/s.bin
SMALL_BYTES=$((MB << 18))

mkdir -p /tmp/src
head -c $((MB << 20)) /dev/urandom >"$SRC"
head -c "$SMALL_BYTES" /dev/urandom >"$SMALL"
echo "guest: $(uname -r); modules: $(for m in cifs ksmbd rdma_rxe siw; do
    printf '%s=%s ' "$m" "$(modinfo -F filename "$m" 2>/dev/null | sed 's|.*/lib/modules/[^/]*/||' || echo none)"
done)"

# ---------------------------------------------------------------- the server under test
# P names it; srv_dir SHARE is where SHARE's files are on the server; srv_alive proves it still
# serves over TCP; OWNER is who holds its RDMA resources (rdma_owned); STATS=1 when it has the
# "smbdirect: ..." counters.
P='' OWNER='' STATS=0
srv_dir() {
    case $1 in
        share) echo "$KSMBD_DIR" ;;
        block) echo /srv/block ;;
        dax) echo /mnt/pmem/share ;;
    esac
}
srv_alive() {
    case $P in
        ksmbd)
            pgrep -x ksmbd.mountd >/dev/null || { echo "ksmbd.mountd is gone"; return 1; }
            run_limited 30 smbclient //127.0.0.1/share -p 445 -U "$USER_NAME%$USER_PASS" -m SMB3 -c ls
            ;;
        daxsmbd)
            kill -0 "$SPID" 2>/dev/null || { echo "daxsmbd (pid $SPID) is gone"; return 1; }
            run_limited 30 smb block ls
            ;;
    esac
}
snap() { if [ "$STATS" = 1 ]; then smbd_line; fi; }
stats_check() { # WHAT CMD...: a check of the counters, only where the server has them
    [ "$STATS" = 1 ] && check "$@"
    return 0
}
# umount_all: every cifs mount of this script.
umount_all() {
    local m
    for m in /mnt/sd-*; do cifs_umount "$m"; done
}
# report_stuck: client tasks in D state (the 6.1 teardown hang), reported as notes.
report_stuck() {
    local s
    s=$(stuck_cifs)
    [ -z "$s" ] || printf '%s\n' "$s" | sed 's/^/note   client task stuck: /'
}

# ---------------------------------------------------------------- scenarios
# core SHARE LABEL [ADDR] [OPTIONS]: mount over RDMA at /mnt/sd-SHARE, $MB MiB written, read
# back and compared on both sides; the mount stays. False when the mount does not work.
core() {
    local share=$1 l=$2 addr=${3:-$SD_ADDR} m=/mnt/sd-$1 s0 s1 dir
    dir=$(srv_dir "$share")
    kmark "$l"
    s0=$(snap)
    if ! try "$l: mount //$addr/$share -o rdma" rdma_mount "$share" "$m" "$addr" "${4:-}"; then
        ksince | tail -n 8 | sed 's/^/    | dmesg: /'
        return 1
    fi
    # A second share of the same server rides on the client's existing connection.
    if kgrep 'RDMA transport established' || [ "$(grep -c "^$(printf '//%s/' "$addr")" /proc/mounts)" -gt 1 ]; then
        ok "$l: dmesg says RDMA transport established (or the mount shares an RDMA connection)"
    else
        bad "$l: dmesg says RDMA transport established"
    fi
    check "$l: DebugData shows the SMBDirect transport" grep -q -E 'SMBDirect (\(in hex\) )?protocol version' /proc/fs/cifs/DebugData
    cp /proc/fs/cifs/DebugData "$H/debugdata-$P-$share.txt" 2>/dev/null
    check "$l: write $MB MiB" run_limited 180 write_file "$SRC" "$m/d.bin"
    check "$l: read back through the mount, sha256 equal" run_limited 180 same_file "$SRC" "$m/d.bin"
    check "$l: server-side file sha256 equal" same_file "$SRC" "$dir/d.bin"
    s1=$(snap)
    stats_check "$l: the server pulled the written data with RDMA READs" grew "$s0" "$s1" rdma_reads
    stats_check "$l: the server pushed the read data with RDMA WRITEs" grew "$s0" "$s1" rdma_writes
    stats_check "$l: the server invalidated the client's buffers (Send With Invalidate)" grew "$s0" "$s1" send_invalidates
    if [ "$STATS" = 1 ] && [ "$share" = dax ]; then
        if grep -q 'share \[dax\]: RDMA into pmem on rxe0: direct' "$SLOG"; then
            check "$l: RDMA went straight into and out of pmem (direct_bytes)" grew "$s0" "$s1" direct_bytes $((MB << 20))
            check "$l: no byte through bounce buffers (bounce_bytes)" same_stat "$s0" "$s1" bounce_bytes
        else
            check "$l: RDMA into pmem through bounce buffers (bounce_bytes)" grew "$s0" "$s1" bounce_bytes $((MB << 20))
        fi
    fi
    return 0
}

reads_loop() { # FILE N: N reads of 64 KiB, in runs of up to 500 over the start of FILE
    local i=0 c
    while [ "$i" -lt "$2" ]; do
        c=$(($2 - i))
        [ "$c" -le 500 ] || c=500
        dd if="$1" of=/dev/null bs=64k count="$c" status=none || return 1
        i=$((i + c))
    done
}
reads_scenario() { # SHARE (mounted by core)
    local m=/mnt/sd-$1 s0 s1 t0 t1
    s0=$(snap)
    t0=$(date +%s%N)
    check "$P: $READS back-to-back 64 KiB reads" run_limited 300 reads_loop "$m/d.bin" "$READS"
    t1=$(date +%s%N)
    note "$P: $READS x 64 KiB reads in $(((t1 - t0) / 1000000)) ms, $(((t1 - t0) / 1000 / READS)) us each"
    s1=$(snap)
    stats_check "$P: one RDMA WRITE or more per read" grew "$s0" "$s1" rdma_writes "$READS"
    stats_check "$P: a Send With Invalidate per read" grew "$s0" "$s1" send_invalidates "$READS"
}

# small_io LABEL MOUNT SHARE: the small file written, read back and compared on both sides.
small_io() {
    check "$1: write $((SMALL_BYTES >> 20)) MiB" run_limited 180 write_file "$SMALL" "$2/s.bin"
    check "$1: read back, sha256 equal" run_limited 180 same_file "$SMALL" "$2/s.bin"
    check "$1: server-side sha256 equal" same_file "$SMALL" "$(srv_dir "$3")/s.bin"
}

# signed_scenario SHARE: with signing the client sends the data in SMB Direct messages (no RDMA
# READ or WRITE); sealed the same, encrypted, with 64 KiB reads and writes.
signed_scenario() {
    local share=$1 m=/mnt/sd-sign s0 s1 how opts
    for how in sign seal; do
        opts=$how
        [ "$how" = seal ] && opts="seal,rsize=65536,wsize=65536"
        kmark "$P $how"
        s0=$(snap)
        if try "$P $how: mount -o rdma,$opts" rdma_mount "$share" "$m" "$SD_ADDR" "$opts"; then
            small_io "$P $how" "$m" "$share"
            s1=$(snap)
            stats_check "$P $how: no RDMA READ (the data came in sends)" same_stat "$s0" "$s1" rdma_reads
            stats_check "$P $how: no RDMA WRITE (the data went in sends)" same_stat "$s0" "$s1" rdma_writes
            stats_check "$P $how: the server sent and received messages" grew "$s0" "$s1" receives $((SMALL_BYTES / 8192))
            cifs_umount "$m"
        else
            ksince | grep -E 'CIFS|smbd|rdma' | tail -n 6 | sed 's/^/    | dmesg: /'
        fi
    done
}

multichannel_scenario() {
    local share=$1 m=/mnt/sd-mc s _
    kmark "$P multichannel"
    if ! try "$P multichannel: mount -o rdma,multichannel,max_channels=2" \
        rdma_mount "$share" "$m" "$SD_ADDR" multichannel,max_channels=2; then
        ksince | tail -n 6 | sed 's/^/    | dmesg: /'
        return
    fi
    for _ in $(seq 30); do
        grep -q 'Extra Channels: 1' /proc/fs/cifs/DebugData && break
        sleep 1
    done
    cp /proc/fs/cifs/DebugData "$H/debugdata-$P-multichannel.txt"
    ksince | grep -i 'channel' | sed 's/^/    | dmesg: /'
    check "$P multichannel: two channels (DebugData: Extra Channels: 1)" grep -q 'Extra Channels: 1' /proc/fs/cifs/DebugData
    # The client takes the fastest interfaces the server lists (FSCTL_QUERY_NETWORK_INTERFACE_
    # INFO): rxe1's or siw0's address (both 10 Gbps), never another connection on rxe0.
    check "$P multichannel: the second channel is SMB Direct on rxe1 ($MC_ADDR) or siw0" \
        sh -c "rdma resource show cm_id | grep -E '^link (rxe1|siw0)/' | grep -v LISTEN | grep -q ."
    small_io "$P multichannel" "$m" "$share"
    if [ "$STATS" = 1 ]; then
        s=$(smbd_line)
        check "$P multichannel: the server counts two SMB Direct connections" test "$(stat_of "$s" connections)" -ge 2
    fi
    cifs_umount "$m"
}

# A dd killed with SIGKILL while its I/O is in flight; the mount and the server carry on.
kill_scenario() {
    local share=$1 m=/mnt/sd-$1 pid what
    for what in write read; do
        if [ "$what" = write ]; then
            dd if="$SRC" of="$m/kill.bin" bs=1M conv=fsync status=none &
        else
            dd if="$m/d.bin" of=/dev/null bs=1M status=none &
        fi
        pid=$!
        sleep 1.5
        kill -KILL "$pid" 2>/dev/null
        check "$P kill -9: the killed $what dd is gone within 30 s" run_limited 30 wait_gone "$pid"
    done
    check "$P kill -9: the mount still reads correctly" run_limited 180 same_file "$SRC" "$m/d.bin"
    check "$P kill -9: the server still serves (TCP)" srv_alive
}

# The RDMA interface goes down and up again under a mount.
link_scenario() {
    local share=$1 m=/mnt/sd-$1
    kmark "$P link down"
    ip link set sd0 down
    if run_limited 30 same_file "$SMALL" "$m/s.bin" >/dev/null 2>&1; then
        note "$P link down: I/O on the mount still worked with sd0 down (rxe loops local traffic back)"
    else
        note "$P link down: I/O on the mount failed or hung with sd0 down"
    fi
    ip link set sd0 up
    check "$P link up: rxe0 ACTIVE again" wait_rdma_active rxe0
    if run_limited 60 same_file "$SRC" "$m/d.bin" >/dev/null 2>&1; then
        note "$P link up: the old mount works again"
    else
        note "$P link up: the old mount does not work (yet)"
    fi
    ksince | grep -E 'CIFS|smbd' | tail -n 5 | sed 's/^/    | dmesg: /'
    cifs_umount "$m"
    check "$P link up: the server still serves (TCP)" srv_alive
    if retry_mount "$share" "$m" "$SD_ADDR"; then
        ok "$P link up: a fresh RDMA mount over rxe0 works"
    else
        # The device's own state (ksmbd gets no connection over it either): the server must
        # still take RDMA connections on its other device.
        note "$P link up: no fresh RDMA mount over rxe0 after the flap ($(uname -r))"
        check "$P link up: a fresh RDMA mount over rxe1 ($MC_ADDR) works" retry_mount "$share" "$m" "$MC_ADDR"
    fi
    check "$P link up: data correct on the fresh mount" run_limited 180 same_file "$SRC" "$m/d.bin"
    cifs_umount "$m"
}
# retry_mount SHARE DIR [ADDR]: an RDMA mount, tried for up to 30 s (a server may take a moment to
# listen again after a device event).
retry_mount() {
    local t=$((SECONDS + 30))
    while :; do
        rdma_mount "$1" "$2" "${3:-$SD_ADDR}" && return 0
        [ "$SECONDS" -lt "$t" ] || return 1
        sleep 3
    done
}

# rxe0 removed (rdma link delete: every user must let go of the device) and added again, first
# with no client on it, then (LIVE=1) under a mounted client.
REMOVED_OK=1
removal_scenario() {
    local share=$1 live=$2 m=/mnt/sd-$1 l="$P rxe0 removal${2:+ (live mount)}"
    [ "$REMOVED_OK" = 1 ] || { note "$l: skipped (an earlier removal did not finish)"; return; }
    kmark "$l"
    if [ -n "$live" ]; then
        check "$l: mount" rdma_mount "$share" "$m" "$SD_ADDR"
    fi
    # rdma link delete waits until every user let go of the device. When it hangs while the
    # server holds nothing on rxe0 any more and client tasks are stuck, the client holds it
    # (the 6.1 teardown hang): reported, not failed.
    if run_limited 90 rdma link delete rxe0 >/tmp/delete.out 2>&1; then
        ok "$l: rdma link delete rxe0 finishes (every user let go of it)"
    else
        REMOVED_OK=0
        if [ "$(on_device "$OWNER" rxe0)" = 0 ] && [ -n "$(stuck_cifs)" ]; then
            note "$l: rdma link delete rxe0 hangs, held by the client (the server let go of it): [cifs] $(rdma_owned '[cifs]')"
        else
            bad "$l: rdma link delete rxe0 finishes (the server still holds $(on_device "$OWNER" rxe0) QPs/cm_ids on rxe0)"
        fi
        sed 's/^/    | /' /tmp/delete.out
        rdma resource show 2>&1 | sed 's/^/    | /'
        report_stuck
    fi
    ksince | grep -E 'CIFS|smbd|rxe|ksmbd' | tail -n 6 | sed 's/^/    | dmesg: /'
    check "$l: the server still serves (TCP)" srv_alive
    cifs_umount "$m"
    [ "$REMOVED_OK" = 1 ] || return
    check "$l: rxe0 added again" rxe_add rxe0 sd0
    check "$l: a fresh RDMA mount works" retry_mount "$share" "$m"
    check "$l: data correct on the fresh mount" run_limited 180 same_file "$SRC" "$m/d.bin"
    cifs_umount "$m"
}

siw_scenario() {
    local share=$1 m=/mnt/sd-siw
    kmark "$P siw"
    if ! try "$P siw: mount //$IW_ADDR/$share -o rdma (iWARP, port 5445)" rdma_mount "$share" "$m" "$IW_ADDR"; then
        ksince | tail -n 6 | sed 's/^/    | dmesg: /'
        return
    fi
    check "$P siw: the connection is on siw0, port 5445" \
        sh -c "rdma resource show cm_id | grep '^link siw0/' | grep -v LISTEN | grep -q ':5445'"
    small_io "$P siw" "$m" "$share"
    cifs_umount "$m"
}

# resources_idle LABEL BASE-OWNED BASE-SUMMARY: after every unmount, the server holds what it
# held idle, and (unless a client task hangs) `rdma resource show` is back to its baseline.
resources_idle() { # WHAT OWNED SUMMARY [SECONDS]
    local now _ stuck
    for _ in $(seq "${4:-30}"); do
        now=$(rdma_owned "$OWNER")
        [ "$now" = "$2" ] && break
        sleep 1
    done
    check "$1: the server's RDMA resources back to idle ($2; now $now)" test "$now" = "$2"
    stuck=$(stuck_cifs)
    for _ in $(seq 15); do
        [ "$(rdma_summary)" = "$3" ] && break
        sleep 1
    done
    if [ "$(rdma_summary)" = "$3" ]; then
        ok "$1: rdma resource show back to its baseline"
    elif [ -n "$stuck" ]; then
        note "$1: rdma resource show not back to its baseline, held by the client: [cifs] $(rdma_owned '[cifs]')"
        report_stuck
    else
        bad "$1: rdma resource show back to its baseline"
        diff <(printf '%s\n' "$3") <(rdma_summary) | sed 's/^/    | /'
    fi
}

# suite SHARES...: every scenario (the first share is the block share of the robustness steps).
suite() {
    local first=$1 s
    core "$first" "$P [$first]" || return 1
    if [ -n "${SD_ONLY:-}" ]; then
        # One scenario after the first share's core check (for chasing a failure).
        cifs_umount "/mnt/sd-$first"
        "${SD_ONLY}_scenario" "$first"
        return 0
    fi
    for s in "${@:2}"; do core "$s" "$P [$s]"; done
    reads_scenario "$first"
    for s in "$@"; do cifs_umount "/mnt/sd-$s"; done
    report_stuck
    resources_idle "$P after the first unmounts" "$BASE_OWNED" "$BASE_SUMMARY"
    # The device removals are daxsmbd's: on 6.1 a client task stuck in its teardown keeps rxe0
    # from going away, and the later steps would then have no rxe0. The idle one comes first,
    # before any stuck client task; the live one last.
    [ "$P" = daxsmbd ] && removal_scenario "$first" ""
    signed_scenario "$first"
    multichannel_scenario "$first"
    if rdma_mount "$first" "/mnt/sd-$first" "$SD_ADDR"; then
        kill_scenario "$first"
    else
        bad "$P: mount for the robustness steps"
    fi
    cifs_umount "/mnt/sd-$first"
    if [ -n "${SIW_OK:-}" ]; then siw_scenario "$first"; fi
    [ "$P" = daxsmbd ] && removal_scenario "$first" live
    # Last: on 7.3, rxe0 takes no new RDMA connection after its link went down and up, for
    # ksmbd as for daxsmbd.
    if rdma_mount "$first" "/mnt/sd-$first" "$SD_ADDR"; then
        link_scenario "$first"
    else
        bad "$P: mount for the link step"
    fi
    umount_all
    # The connection the link flap cut off is gone on the client but not on the server, which
    # notices at its next keepalive (MS-SMBD 3.1.6.2: 120 s idle, 5 s for the answer).
    resources_idle "$P at the end (the flapped connection reaped by keepalive)" "$BASE_OWNED" "$BASE_SUMMARY" 150
}

# ---------------------------------------------------------------- ksmbd
run_ksmbd() {
    section "ksmbd (the reference server; SD_KSMBD=$KSMBD_SUITE)"
    P=ksmbd OWNER='[ksmbd]' STATS=0
    if ! try "ksmbd: started (ksmbd.ko, ksmbd.mountd; TCP 445)" ksmbd_start; then return; fi
    # 7.x: the SMB Direct transport is a module of its own (loaded with ksmbd), which then owns
    # the RDMA resources of server and client alike.
    lsmod | grep -q '^smbdirect ' && OWNER='[smbdirect]'
    check "ksmbd: SMB Direct listener on port 445" wait_listening "$OWNER" 0.0.0.0:445
    rdma resource show cm_id | grep LISTEN | sed 's/^/   /'
    BASE_OWNED=$(rdma_owned "$OWNER") BASE_SUMMARY=$(rdma_summary)
    if [ "$KSMBD_SUITE" = full ]; then
        suite share
    else
        core share "ksmbd [share]"
        umount_all
        report_stuck
        resources_idle "ksmbd" "$BASE_OWNED" "$BASE_SUMMARY"
    fi
    debugdata_once ksmbd share
    check "ksmbd: stopped (ksmbd.control -s, rmmod)" ksmbd_stop
    report_stuck
}
# debugdata_once NAME SHARE: what the client negotiated (sizes, credits), from the saved DebugData.
debugdata_once() {
    local f=$H/debugdata-$1-$2.txt
    [ -f "$f" ] || return 0
    echo "   client side ($1, from DebugData):"
    grep -E 'SMBDirect|^Conn |Credits|max_readwrite|Pending' "$f" | sed 's/^[[:space:]]*/     /'
}

# ---------------------------------------------------------------- daxsmbd
run_daxsmbd() {
    section "daxsmbd"
    P=daxsmbd STATS=1
    if ! wait_rdma_active rxe0 >/dev/null; then
        bad "daxsmbd: rxe0 is not usable any more (an earlier step broke it): $(rdma link show 2>&1 | tr '\n' ' ')"
    fi
    if lsmod | grep -q '^ksmbd '; then
        bad "daxsmbd: ksmbd is still loaded: its SMB Direct listener holds port 445"
        return
    fi
    mkdir -p /srv/block && chmod 777 /srv/block
    pmem_mount ext4 /mnt/pmem
    mkdir -p /mnt/pmem/share && chmod 777 /mnt/pmem/share
    users_db || { bad "daxsmbd: user database"; return; }
    local ifaces="127.0.0.1 $SD_ADDR $MC_ADDR"
    [ -n "${SIW_OK:-}" ] && ifaces+=" $IW_ADDR"
    if ! server_start rdma "[global]
smb ports = $PORT
server smb transports = tcp, rdma
interfaces = $ifaces
server multi channel support = yes
user database = /tmp/users.db
log level = ${SD_LOG_LEVEL:-1}
[block]
path = /srv/block
read only = no
dax = off
[dax]
path = /mnt/pmem/share
read only = no
dax = on" >/tmp/start.out 2>&1; then
        bad "daxsmbd: starts with 'server smb transports = tcp, rdma'"
        sed 's/^/    | /' /tmp/start.out
        if grep -q "server smb transports" "$SLOG"; then
            echo "    => this daxsmbd has no SMB Direct yet (it does not know 'server smb transports'); the SMB Direct scenarios cannot run"
        fi
        return
    fi
    OWNER=$SPID
    ok "daxsmbd: started (pid $SPID, TCP $PORT)"
    grep -E 'smbdirect|rdma|RDMA' "$SLOG" | head -n 12 | sed 's/^/   log: /'
    check "daxsmbd: SMB Direct listener (RoCE) on $SD_ADDR:445" wait_listening "$SPID" "$SD_ADDR:445"
    check "daxsmbd: SMB Direct listener (RoCE) on $MC_ADDR:445" wait_listening "$SPID" "$MC_ADDR:445"
    if [ -n "${SIW_OK:-}" ]; then
        check "daxsmbd: SMB Direct listener (iWARP) on $IW_ADDR:5445" wait_listening "$SPID" "$IW_ADDR:5445"
    fi
    check "daxsmbd: share [dax] names its RDMA-into-pmem mode on rxe0" grep -q -E 'share \[dax\]: RDMA into pmem on rxe0: (bounce|direct)' "$SLOG"
    if [ "$(uname -r | cut -d. -f1)" -ge 7 ]; then
        check "daxsmbd: on $(uname -r) (rxe with ODP) that mode is direct" grep -q 'share \[dax\]: RDMA into pmem on rxe0: direct' "$SLOG"
    else
        check "daxsmbd: on $(uname -r) (rxe without ODP) that mode is bounce" grep -q 'share \[dax\]: RDMA into pmem on rxe0: bounce' "$SLOG"
    fi
    grep -o 'share \[dax\]: RDMA into pmem .*' "$SLOG" | sed 's/^/   log: /'
    rdma resource show cm_id | grep LISTEN | sed 's/^/   /'
    BASE_OWNED=$(rdma_owned "$SPID") BASE_SUMMARY=$(rdma_summary)
    note "daxsmbd idle: $BASE_OWNED"
    if ! suite block dax; then
        echo "    => no SMB Direct mount of daxsmbd works: the other scenarios are skipped"
        umount_all
    fi
    debugdata_once daxsmbd block
    echo "   server: $(smbd_line)"
    server_stop
    check "daxsmbd: no crash in the log" sh -c "! grep -q -E 'Segmentation|Bus error|AddressSanitizer|terminate called' '$SLOG'"
    umount /mnt/pmem 2>/dev/null
}

# ---------------------------------------------------------------- main
section "setup: soft-RoCE on sd0 ($SD_ADDR) and sv0 ($MC_ADDR)"
if ! try "rdma_rxe: rxe0 on sd0, rxe1 on sv0, both ACTIVE" rdma_setup; then
    finish
    exit 1
fi
rdma link show | sed 's/^/   /'
rdma_summary | sed 's/^/   baseline: /'
SETUP_SUMMARY=$(rdma_summary)
for srv in $SERVERS; do
    case $srv in
        ksmbd) run_ksmbd ;;
        daxsmbd)
            # After ksmbd: the 6.1 ksmbd listens on 5445 instead of 445 when an iWARP device
            # exists as it loads.
            SIW_OK=
            if have_siw; then
                if try "siw: siw0 on sw0 ($IW_ADDR), ACTIVE" siw_setup; then SIW_OK=1; fi
            else
                note "siw: no siw.ko in the image, the iWARP scenario is skipped"
            fi
            run_daxsmbd
            ;;
        *) bad "unknown server '$srv' in SD_SERVERS" ;;
    esac
done
section "end"
umount_all
report_stuck
[ "$UMOUNT_HANGS" = 0 ] || note "$UMOUNT_HANGS umount(s) hung and were detached lazily"
note "setup baseline: $(printf '%s\n' "$SETUP_SUMMARY" | tr '\n' ';') now: $(rdma_summary | tr '\n' ';')"
finish
