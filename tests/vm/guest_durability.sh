#!/bin/bash
# Guest half of tests/vm/durability.sh; /host/phase says which boot this is:
#   write            boot 1: write the pattern write-through, record each acknowledgement, crash
#   verify           boot 2: every acknowledged block must be on the NVDIMM
#   verify-tampered  boot 2 of the negative control: first damage the file on the NVDIMM (cut off
#                    the last acknowledged block, change one byte of block 10), then verify; the
#                    verification must name exactly those two blocks
set -u
. "${VMRUN_HOST:-/host}/guest_common.sh"
BLOCK=65536
BLOCKS=48
FILE=/mnt/pmem/share/dur.bin

# verify_blocks LAST: compares blocks 0..LAST of $FILE with the pattern, one by one; prints the
# numbers of the blocks that are missing or differ (nothing when all are intact).
verify_blocks() {
    python3 - "$H/pattern.bin" "$FILE" "$BLOCK" "$1" <<'PY'
import sys
pattern_path, file_path, block, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pattern = open(pattern_path, "rb").read()
try:
    data = open(file_path, "rb").read()
except OSError:
    data = b""
for i in range(last + 1):
    want = pattern[i * block:(i + 1) * block]
    got = data[i * block:(i + 1) * block]
    if got != want:
        print(i, "missing" if len(got) < block else "differs")
PY
}

case $(cat "$H/phase") in
    write)
        pmem_mount ext4 /mnt/pmem
        mkdir -p /mnt/pmem/share && chmod 777 /mnt/pmem/share
        head -c $((BLOCK * BLOCKS)) /dev/urandom >"$H/pattern.bin"
        server_start dur "[global]
smb ports = $PORT
interfaces = 127.0.0.1
user database = /tmp/users.db
log level = 1
[dax]
path = /mnt/pmem/share
read only = no
dax = on" || exit 1
        grep -q 'share \[dax\]: DAX active' "$SLOG" || {
            echo "share [dax] did not start on the DAX path"
            exit 1
        }
        cifs_mount dax /mnt/cifs || exit 1
        rm -f "$H/acked"
        # One open with O_SYNC (the kernel client opens with FILE_WRITE_THROUGH, so every WRITE
        # is made durable before its response) kept open until the crash: no CLOSE or FLUSH
        # persists anything for us. Each block appends (the file grows: allocation metadata).
        # pwrite returns after the WRITE response; only then is the block recorded on the host
        # (/host is 9p with cache=none: the record is on the host when write() returns).
        python3 - "$H/pattern.bin" /mnt/cifs/dur.bin "$BLOCK" "$BLOCKS" "$H/acked" "$SPID" "$SLOG" \
            "$H/write_stats" <<'PY' || exit 1
import os, signal, sys, time
pattern_path, target, block, blocks, acked = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
server_pid, server_log, stats_out = int(sys.argv[6]), sys.argv[7], sys.argv[8]
pattern = open(pattern_path, "rb").read()
fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_SYNC, 0o644)
for i in range(blocks):
    if os.pwrite(fd, pattern[i * block:(i + 1) * block], i * block) != block:
        sys.exit("short write at block %d" % i)
    with open(acked, "w") as f:
        f.write("%d\n" % i)
# The server's DAX counters (SIGUSR1 logs one "dax: ..." line), for the host to check that the
# writes went through the mapping with a persist each.
os.kill(server_pid, signal.SIGUSR1)
line = ""
for _ in range(50):
    lines = [l for l in open(server_log) if "dax: reads=" in l]
    if lines:
        line = lines[-1][lines[-1].index("dax: "):].strip()
        break
    time.sleep(0.1)
with open(stats_out, "w") as f:
    f.write(line + "\n")
print(line)
print("all %d blocks acknowledged; crashing with the file still open" % blocks)
sys.stdout.flush()
# Crash from here, with the descriptor open (no CLOSE reaches the server).
with open("/proc/sysrq-trigger", "w") as f:
    f.write("c")
PY
        sleep 30
        exit 3 # not reached
        ;;
    verify | verify-tampered)
        mkdir -p /mnt/pmem
        mount -o dax /dev/pmem0 /mnt/pmem || exit 1
        last=$(cat "$H/acked")
        echo "acknowledged blocks: 0..$last; file size $(stat -c %s "$FILE" 2>/dev/null || echo none)"
        if [ "$(cat "$H/phase")" = verify-tampered ]; then
            truncate -s $((last * BLOCK)) "$FILE"
            python3 -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xFF])); f.close()' "$FILE" $((10 * BLOCK + 4321))
            # Make the damage reach the NVDIMM's file system before reading back.
            sync
            echo "tampered: block $last cut off, one byte of block 10 changed"
        fi
        verify_blocks "$last" >/tmp/bad.txt
        sed 's/^/    bad block: /' /tmp/bad.txt
        cp /tmp/bad.txt "$H/bad_blocks"
        check "every acknowledged block 0..$last is on the NVDIMM and equal to the pattern" \
            test ! -s /tmp/bad.txt
        finish
        ;;
esac
