# shellcheck shell=bash
# Guest-side helpers of the SMB Direct tests (tests/vm/guest_smbdirect.sh and
# tests/bench/rdma_vm_guest.sh), sourced after guest_common.sh: soft-RoCE and soft-iWARP devices
# on interfaces of their own, ksmbd (the reference server), the kernel client over RDMA, steps
# with a time limit, the server's "smbdirect: ..." counters and the RDMA resources each owner
# holds.
#
# Addresses (documentation ranges; the guest has no NIC, nothing leaves it):
#   sd0  dummy                    192.0.2.1/24     rxe0   the main SMB Direct address
#   sv0  veth (peer sv1 .2)       198.51.100.1/24  rxe1   the second channel (multichannel)
#   sw0  veth (peer sw1 .2)       203.0.113.1/24   siw0   soft-iWARP (port 5445), when siw.ko exists
# rdma_cm cannot resolve routes over an rxe on lo, hence the dummy.
SD_ADDR=192.0.2.1
MC_ADDR=198.51.100.1
IW_ADDR=203.0.113.1
KSMBD_DIR=/srv/ksmbd
STEP_TIMEOUT=${STEP_TIMEOUT:-60}

note() { echo "note   $*"; }
# try WHAT CMD...: check WHAT CMD..., and its result as the exit status (check has none).
try() {
    local f=$FAILS
    check "$@"
    [ "$FAILS" = "$f" ]
}
section() { echo "== $*"; }

# run_limited SECS CMD...: CMD (a program or a function), given up on after SECS seconds: it is
# sent SIGKILL and left behind, since a task in uninterruptible sleep (a hung SMB Direct teardown)
# outlives even that; 124 then, with a line naming it and its state. timeout(1) would wait for
# such a task forever.
run_limited() {
    local secs=$1 pid i
    shift
    "$@" &
    pid=$!
    for ((i = 0; i < secs * 5; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid"
            return
        fi
        sleep 0.2
    done
    echo "gave up after ${secs} s: $* (state $(ps -o stat= -p "$pid" 2>/dev/null | tr -d ' '))"
    pkill -KILL -P "$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null
    return 124
}

# kmark LABEL writes a numbered marker line into the kernel log; ksince prints the log from the
# latest marker on, kgrep PATTERN searches it.
KN=0
kmark() {
    KN=$((KN + 1))
    echo "smbdirect-test: mark $KN $1" >/dev/kmsg
}
ksince() { dmesg | sed -n "/smbdirect-test: mark $KN /,\$p"; }
kgrep() { ksince | grep -q -- "$1"; }

# ---------------------------------------------------------------- devices
# wait_rdma_active DEV: until DEV's port is ACTIVE (10 s).
wait_rdma_active() {
    local _
    for _ in $(seq 50); do
        rdma link show "$1/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
        sleep 0.2
    done
    rdma link show 2>&1
    return 1
}
rxe_add() { # DEV NETDEV
    rdma link add "$1" type rxe netdev "$2" && wait_rdma_active "$1"
}
# rdma_setup: rdma_rxe, sd0 with rxe0, the veth pair sv0/sv1 with rxe1 on sv0.
rdma_setup() {
    modprobe rdma_rxe || return 1
    modprobe rdma_ucm 2>/dev/null
    ip link add sd0 type dummy &&
        ip addr add "$SD_ADDR/24" dev sd0 && ip link set sd0 up || return 1
    ip link add sv0 type veth peer name sv1 &&
        ip addr add "$MC_ADDR/24" dev sv0 && ip addr add 198.51.100.2/24 dev sv1 &&
        ip link set sv0 up && ip link set sv1 up || return 1
    rxe_add rxe0 sd0 && rxe_add rxe1 sv0
}
have_siw() { modinfo siw >/dev/null 2>&1; }
# siw_setup: soft-iWARP siw0 on sw0 (veth to sw1): the iWARP port of SMB Direct is 5445.
siw_setup() {
    modprobe siw || return 1
    ip link add sw0 type veth peer name sw1 &&
        ip addr add "$IW_ADDR/24" dev sw0 && ip addr add 203.0.113.2/24 dev sw1 &&
        ip link set sw0 up && ip link set sw1 up || return 1
    rdma link add siw0 type siw netdev sw0 && wait_rdma_active siw0
}

# rdma_summary: `rdma resource show` without the device index (it changes when a device is
# removed and added again), one line per device.
rdma_summary() { rdma resource show 2>&1 | sed 's/^[0-9]*: //' | sort; }
# owner_re WHO: a grep -E pattern for the lines of `rdma resource show` that WHO owns: a process
# by its PID (any of its threads: the kernel records the thread that made the resource), a
# kernel user by its module's name in brackets ("[ksmbd]", "[cifs]").
owner_re() {
    case $1 in
        [0-9]*) echo " pid ($(find "/proc/$1/task" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | paste -sd'|' -)) " ;;
        *) echo " comm \\[${1//[][]/}\\]" ;;
    esac
}
# rdma_owned WHO: the RDMA resources WHO holds, as "pd=N cq=N qp=N cm_id=N mr=N".
rdma_owned() {
    local re r n out=""
    re=$(owner_re "$1")
    for r in pd cq qp cm_id mr; do
        n=$(rdma resource show "$r" 2>/dev/null | grep -c -E "$re" || true)
        out+="$r=$n "
    done
    echo "${out% }"
}
# listening WHO ADDR:PORT: a LISTEN cm_id of WHO bound to ADDR:PORT (ksmbd: 0.0.0.0:445).
listening() {
    rdma resource show cm_id 2>/dev/null | grep 'state LISTEN' | grep -E "$(owner_re "$1")" |
        grep -q -F "src-addr $2 "
}
# on_device WHO DEV: how many queue pairs and cm_ids WHO holds on DEV.
on_device() {
    local re
    re=$(owner_re "$1")
    { rdma resource show qp; rdma resource show cm_id; } 2>/dev/null | grep "^link $2/" | grep -c -E "$re"
}
wait_listening() { # WHO ADDR:PORT [SECS]
    local i
    for ((i = 0; i < ${3:-10} * 5; i++)); do
        listening "$1" "$2" && return 0
        sleep 0.2
    done
    rdma resource show cm_id 2>&1
    return 1
}

# wait_gone PID: until PID has ended (a zombie counts as ended).
wait_gone() {
    while :; do
        case $(ps -o stat= -p "$1" 2>/dev/null) in
            "" | Z*) return 0 ;;
        esac
        sleep 0.2
    done
}

# Tasks in uninterruptible sleep whose name starts with cifs (cifsd, cifsiod...), with the first
# lines of their kernel stacks: the 6.1 client's SMB Direct teardown can hang in smbd_destroy().
stuck_cifs() {
    local pid
    for pid in $(ps -eo pid=,stat=,comm= | awk '$2 ~ /^D/ && $3 ~ /^cifs/ {print $1}'); do
        echo "$pid $(cat "/proc/$pid/comm") in D state: $(head -3 "/proc/$pid/stack" 2>/dev/null |
            sed 's/^\[<0>\] //' | tr '\n' ' ')"
    done
}

# ---------------------------------------------------------------- the kernel client
# rdma_mount SHARE DIR ADDR [OPTIONS]: mount -o rdma (the client tries port 5445, then 445, and
# ignores port=), cache=none: every read and write goes to the server.
rdma_mount() {
    mkdir -p "$2"
    run_limited "$STEP_TIMEOUT" mount -t cifs "//$3/$1" "$2" \
        -o "rdma,vers=3.1.1,username=$USER_NAME,password=$USER_PASS,cache=none${4:+,$4}"
}
# tcp_mount SHARE DIR PORT [OPTIONS]
tcp_mount() {
    mkdir -p "$2"
    run_limited "$STEP_TIMEOUT" mount -t cifs "//127.0.0.1/$1" "$2" \
        -o "vers=3.1.1,username=$USER_NAME,password=$USER_PASS,port=$3,cache=none${4:+,$4}"
}
UMOUNT_HANGS=0
# cifs_umount DIR: umount; when that hangs, detach lazily (reported, counted in UMOUNT_HANGS).
# Afterwards a client task stuck in D state is reported (not failed: a client bug).
cifs_umount() {
    # Not mountpoint(1): a dead cifs mount fails its stat ("Host is down").
    grep -q " $1 cifs " /proc/mounts || return 0
    if ! run_limited "$STEP_TIMEOUT" umount "$1" >/tmp/umount.out 2>&1; then
        UMOUNT_HANGS=$((UMOUNT_HANGS + 1))
        note "umount $1 did not finish: $(tr '\n' ' ' </tmp/umount.out); detaching with umount -l"
        run_limited 10 umount -l "$1" || note "umount -l $1 failed too"
    fi
    return 0
}
# debugdata_smbd: the SMB Direct lines of /proc/fs/cifs/DebugData (sizes, credits, counters).
debugdata_smbd() {
    grep -E 'SMBDirect|^Conn |receive_credit|Credits|max_readwrite|Extra Channels|Channel:|rdma' \
        /proc/fs/cifs/DebugData 2>/dev/null | sed 's/^[[:space:]]*//'
}
# sha_of FILE: its sha256 (through a limited step: a read on a dead connection can hang).
sha_of() { sha256sum <"$1" | cut -d' ' -f1; }
same_file() { [ "$(sha_of "$1")" = "$(sha_of "$2")" ]; }
write_file() { dd if="$1" of="$2" bs=1M conv=fsync status=none; }

# ---------------------------------------------------------------- ksmbd
# ksmbd_start [GLOBAL-LINES]: ksmbd.ko and ksmbd.mountd serving [share] ($KSMBD_DIR) to
# $USER_NAME (a Unix account of that name: ksmbd acts as it), multichannel on; TCP on 445.
ksmbd_start() {
    id "$USER_NAME" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
    mkdir -p /etc/ksmbd "$KSMBD_DIR"
    chmod 777 "$KSMBD_DIR"
    printf '[global]\n\tserver multi channel support = yes\n%s\n[share]\n\tpath = %s\n\tread only = no\n' \
        "${1:-}" "$KSMBD_DIR" >/etc/ksmbd/ksmbd.conf
    rm -f /etc/ksmbd/ksmbdpwd.db
    ksmbd.adduser -a "$USER_NAME" -p "$USER_PASS" || return 1
    modprobe ksmbd || return 1
    ksmbd.mountd || return 1
    local _
    for _ in $(seq 100); do
        ss -ltnH 'sport = :445' | grep -q . && return 0
        sleep 0.2
    done
    echo "ksmbd does not listen on TCP 445"
    return 1
}
# ksmbd_stop: ksmbd.control -s and rmmod, each limited (a hung client teardown can block them).
ksmbd_stop() {
    run_limited 60 ksmbd.control -s || return 1
    local _
    for _ in $(seq 50); do
        pgrep -x ksmbd.mountd >/dev/null || break
        sleep 0.2
    done
    # The module stays busy for a moment after the daemon is gone.
    for _ in $(seq 20); do
        run_limited 30 rmmod ksmbd 2>/dev/null && return 0
        sleep 1
    done
    rmmod ksmbd
}

# users_db: daxsmbd's user database (/tmp/users.db) with $USER_NAME, made with a configuration
# of its own: daxsmbd-admin refuses a configuration it does not understand, and the one under
# test may name what this build does not know yet.
users_db() {
    [ -f /tmp/users.db ] && return 0
    printf '[global]\nuser database = /tmp/users.db\n' >/tmp/users.conf
    add_smb_user /tmp/users.conf
}

# ---------------------------------------------------------------- daxsmbd's counters
# smbd_line: SIGUSR1 to the server, then its newest "smbdirect: connections=..." line (empty
# when none comes within 5 s: a server without SMB Direct).
SMBD_RE='smbdirect: connections='
smbd_line() {
    local before _
    before=$(grep -c "$SMBD_RE" "$SLOG" || true)
    kill -USR1 "$SPID" 2>/dev/null || return 0
    for _ in $(seq 50); do
        [ "$(grep -c "$SMBD_RE" "$SLOG" || true)" -gt "$before" ] && break
        sleep 0.1
    done
    grep -o "$SMBD_RE.*" "$SLOG" | tail -1
}
# stat_of LINE KEY: KEY's value in a stats line ("" when absent).
stat_of() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# smbd_stat KEY: KEY's current value (like guest_common.sh's dax_stat).
smbd_stat() { stat_of "$(smbd_line)" "$1"; }
# grew BEFORE AFTER KEY [MIN]: KEY grew by at least MIN (1) between two stats lines.
grew() {
    local b a
    b=$(stat_of "$1" "$3")
    a=$(stat_of "$2" "$3")
    echo "$3: ${b:-none} -> ${a:-none}"
    [ -n "$a" ] && [ -n "$b" ] && [ $((a - b)) -ge "${4:-1}" ]
}
same_stat() { # BEFORE AFTER KEY: KEY did not change
    local b a
    b=$(stat_of "$1" "$3")
    a=$(stat_of "$2" "$3")
    echo "$3: ${b:-none} -> ${a:-none}"
    [ -n "$a" ] && [ "$a" = "$b" ]
}
