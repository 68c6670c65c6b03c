#!/bin/bash
# Guest half of tests/bench/rdma-vm.sh: fio on kernel-client mounts (cache=none), for
#   dx-rdma / dx-tcp      daxsmbd's block share over SMB Direct / over TCP (one server, both)
#   dx-rdma-dax[-MODE]    daxsmbd's DAX share over SMB Direct (MODE from its log: bounce, direct)
#   dx-rdma-daxb          the DAX share with $BENCH_DAX_BOUNCE_OPT (a share option forcing
#                         bounce buffers), when given: bounce vs direct on a kernel with ODP
#   ks-rdma / ks-tcp      ksmbd over SMB Direct / over TCP
# daxsmbd's targets are interleaved within each repetition (the speed of an emulated guest
# drifts); ksmbd runs after daxsmbd, since both want the SMB Direct port 445. Each fio run leaves
# $H/bench/TAG.JOB.REP.json and TAG.JOB.REP.cpu (server CPU ticks over the run, and CLK_TCK).
set -u
. "${VMRUN_HOST:-/host}/guest_common.sh"
. "$H/guest_rdma_common.sh"
# shellcheck disable=SC1091  # written by rdma-vm.sh
. "$H/bench.env"
SECS=${BENCH_SECONDS:-5}
REPS=${BENCH_REPS:-2}
FILE_MB=${BENCH_FILE_MB:-32}
OUT=$H/bench
mkdir -p "$OUT"
JOBS="r4k sr64k sw64k sr1m sw1m"

# cpu_ticks WHO: utime+stime of a process (a PID, all its threads) or of every task whose name
# starts with WHO (ksmbd: its connection threads; its workqueue's kworkers are not counted).
cpu_ticks() {
    if [ "$1" -eq "$1" ] 2>/dev/null; then
        awk '{print $14 + $15}' "/proc/$1/stat"
        return
    fi
    local t sum=0 v
    for t in /proc/[0-9]*; do
        case $(cat "$t/comm" 2>/dev/null) in
            "$1"*)
                v=$(awk '{print $14 + $15}' "$t/stat" 2>/dev/null)
                sum=$((sum + ${v:-0}))
                ;;
        esac
    done
    echo "$sum"
}

# fio_job JOB FILE: one fio run of SECS seconds (psync, queue depth 1), JSON on stdout.
fio_job() {
    local rw bs
    case $1 in
        r4k) rw=randread bs=4k ;;
        sr64k) rw=read bs=64k ;;
        sw64k) rw=write bs=64k ;;
        sr1m) rw=read bs=1m ;;
        sw1m) rw=write bs=1m ;;
    esac
    fio --name="$1" --filename="$2" --rw="$rw" --bs="$bs" --size="${FILE_MB}m" --ioengine=psync \
        --iodepth=1 --time_based --runtime="$SECS" --ramp_time=1 --output-format=json
}
# measure TAG MOUNT WHO REP: every job on MOUNT/bench.bin; WHO is the server (cpu_ticks).
measure() {
    local tag=$1 m=$2 who=$3 rep=$4 j c0 c1
    for j in $JOBS; do
        c0=$(cpu_ticks "$who")
        if ! run_limited $((SECS + 90)) fio_job "$j" "$m/bench.bin" >"$OUT/$tag.$j.$rep.json" 2>"$OUT/$tag.$j.$rep.err"; then
            echo "   $tag $j: fio failed: $(tail -n 2 "$OUT/$tag.$j.$rep.err" | tr '\n' ' ')"
            rm -f "$OUT/$tag.$j.$rep.json"
            continue
        fi
        c1=$(cpu_ticks "$who")
        echo "$((c1 - c0)) $(getconf CLK_TCK)" >"$OUT/$tag.$j.$rep.cpu"
    done
    echo "   $tag rep $rep done at guest uptime $(cut -d' ' -f1 /proc/uptime) s"
}
# bench_file DIR OWNER: the test file, made on the server's side (faster than through a mount).
bench_file() {
    head -c $((FILE_MB << 20)) /dev/urandom >"$1/bench.bin"
    chown "$2" "$1/bench.bin"
}

rdma_setup || { echo "soft-RoCE setup failed"; exit 1; }
id "$USER_NAME" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$USER_NAME"

# ---------------------------------------------------------------- daxsmbd
mkdir -p /srv/block && chmod 777 /srv/block
pmem_mount ext4 /mnt/pmem
mkdir -p /mnt/pmem/share && chmod 777 /mnt/pmem/share
conf() { # TRANSPORT-LINE
    printf '[global]\nsmb ports = %s\n%s\ninterfaces = 127.0.0.1 %s\nuser database = /tmp/users.db\nlog level = 1\n' \
        "$PORT" "$1" "$SD_ADDR"
    printf '[block]\npath = /srv/block\nread only = no\ndax = off\n'
    printf '[dax]\npath = /mnt/pmem/share\nread only = no\ndax = on\n'
    if [ -n "${BENCH_DAX_BOUNCE_OPT:-}" ]; then
        mkdir -p /mnt/pmem/shareb && chmod 777 /mnt/pmem/shareb
        printf '[daxb]\npath = /mnt/pmem/shareb\nread only = no\ndax = on\n%s\n' "$BENCH_DAX_BOUNCE_OPT"
    fi
}
users_db || exit 1
RDMA=1
if ! server_start bench "$(conf 'server smb transports = tcp, rdma')" >/tmp/start.out 2>&1; then
    echo "daxsmbd: no start with SMB Direct: $(grep -m1 -i -E 'error|unknown' "$SLOG")"
    echo "daxsmbd: the RDMA targets are skipped; TCP only"
    RDMA=0
    server_start bench "$(conf '')" || exit 1
fi
[ "$RDMA" = 0 ] || wait_listening "$SPID" "$SD_ADDR:445" || { echo "daxsmbd: no SMB Direct listener; TCP only"; RDMA=0; }
DAXMODE=$(grep -o 'share \[dax\]: RDMA into pmem on rxe0: [a-z]*' "$SLOG" | awk '{print $NF}' | head -n 1)
echo "daxsmbd: pid $SPID, SMB Direct $RDMA, DAX share RDMA mode: ${DAXMODE:-unknown}"
bench_file /srv/block "$USER_NAME"
bench_file /mnt/pmem/share "$USER_NAME"
[ -z "${BENCH_DAX_BOUNCE_OPT:-}" ] || bench_file /mnt/pmem/shareb "$USER_NAME"
TARGETS=()
# TCP first: a failing SMB Direct mount can leave the client reconnecting for a while.
tcp_mount block /mnt/b-tcp "$PORT" && TARGETS+=("dx-tcp:/mnt/b-tcp")
if [ "$RDMA" = 1 ]; then
    rdma_mount block /mnt/b-rdma "$SD_ADDR" && TARGETS+=("dx-rdma:/mnt/b-rdma")
    rdma_mount dax /mnt/d-rdma "$SD_ADDR" && TARGETS+=("dx-rdma-dax-${DAXMODE:-unknown}:/mnt/d-rdma")
    if [ -n "${BENCH_DAX_BOUNCE_OPT:-}" ]; then
        rdma_mount daxb /mnt/db-rdma "$SD_ADDR" && TARGETS+=("dx-rdma-daxb:/mnt/db-rdma")
    fi
fi
for rep in $(seq "$REPS"); do
    # Rotate the order from one repetition to the next.
    n=${#TARGETS[@]}
    for ((i = 0; i < n; i++)); do
        t=${TARGETS[$(((i + rep) % n))]}
        measure "${t%%:*}" "${t#*:}" "$SPID" "$rep"
    done
done
for t in "${TARGETS[@]}"; do cifs_umount "${t#*:}"; done
echo "daxsmbd: $(smbd_line)"
server_stop

# ---------------------------------------------------------------- ksmbd
if ksmbd_start ""; then
    bench_file "$KSMBD_DIR" "$USER_NAME"
    KT=()
    tcp_mount share /mnt/k-tcp 445 && KT+=("ks-tcp:/mnt/k-tcp")
    rdma_mount share /mnt/k-rdma "$SD_ADDR" && KT+=("ks-rdma:/mnt/k-rdma")
    for rep in $(seq "$REPS"); do
        n=${#KT[@]}
        for ((i = 0; i < n; i++)); do
            t=${KT[$(((i + rep) % n))]}
            measure "${t%%:*}" "${t#*:}" ksmbd "$rep"
        done
    done
    for t in "${KT[@]}"; do cifs_umount "${t#*:}"; done
    [ -z "$(stuck_cifs)" ] || stuck_cifs | sed 's/^/note: client task stuck: /'
else
    echo "ksmbd: did not start"
fi
echo "bench done at guest uptime $(cut -d' ' -f1 /proc/uptime) s"
