#!/bin/bash
# Guest half of tests/vm/durability.sh; /host/phase says which boot this is.
set -u
. "${VMRUN_HOST:-/host}/guest_common.sh"
BLOCK=65536
BLOCKS=64

case $(cat "$H/phase") in
    write)
        pmem_mount ext4 /mnt/pmem
        mkdir -p /mnt/pmem/share && chmod 777 /mnt/pmem/share
        head -c $((BLOCK * BLOCKS)) /dev/urandom >"$H/pattern.bin"
        server_start dur "[global]
smb ports = $PORT
interfaces = 127.0.0.1
user database = /tmp/users.db
[dax]
path = /mnt/pmem/share
read only = no
dax = on" || exit 1
        cifs_mount dax /mnt/cifs || exit 1
        rm -f "$H/acked"
        for i in $(seq 0 $((BLOCKS - 1))); do
            # O_SYNC: the kernel client opens with FILE_WRITE_THROUGH; dd returns after the
            # WRITE response.
            dd if="$H/pattern.bin" of=/mnt/cifs/dur.bin bs=$BLOCK skip="$i" seek="$i" count=1 \
                conv=notrunc oflag=sync status=none || exit 1
            echo "$i" >"$H/acked"
        done
        grep -o 'dax: .*' "$SLOG" | tail -1
        kill -USR1 "$SPID"
        sleep 0.5
        grep -o 'dax: .*' "$SLOG" | tail -1
        echo "all $BLOCKS blocks acknowledged; crashing"
        echo c >/proc/sysrq-trigger
        sleep 30
        exit 3 # not reached
        ;;
    verify)
        mkdir -p /mnt/pmem
        mount -o dax /dev/pmem0 /mnt/pmem || exit 1
        last=$(cat "$H/acked")
        n=$(((last + 1) * BLOCK))
        size=$(stat -c %s /mnt/pmem/share/dur.bin 2>/dev/null || echo 0)
        check "file holds every acknowledged block ($size >= $n bytes)" test "$size" -ge "$n"
        check "acknowledged blocks 0..$last identical to the pattern" \
            cmp -n "$n" "$H/pattern.bin" /mnt/pmem/share/dur.bin
        finish
        ;;
esac
