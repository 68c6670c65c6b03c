#!/bin/bash
# The io_uring block path with its share options on (README "Block path"), with smbclient:
# direct io = yes (O_DIRECT for aligned requests, the page cache for the rest), io poll = yes
# (falls back with a log line on devices without poll queues, as on most test machines) and
# io sqpoll = yes. The full smbclient_test.sh runs with the default (buffered) options; this
# is the cheap second variant: a 64 MiB put/get, unaligned sizes, and proof that the big file's
# data bypassed the page cache.
#
#   tests/interop/directio_test.sh
#   SHARE_OPTIONS='direct io = yes' tests/interop/smbclient_test.sh   # the whole suite, direct
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

SHARE_OPTIONS='direct io = yes; io poll = yes; io sqpoll = yes'
LOG_LEVEL=${LOG_LEVEL:-1}
interop_setup

WORK=$TESTDIR/client
mkdir -p "$WORK"
head -c 64M /dev/urandom >"$WORK/big.bin"
head -c 1000003 /dev/urandom >"$WORK/odd.bin"
sum() { sha256sum "$1" | cut -d' ' -f1; }
# Bytes of FILE in the page cache (util-linux fincore).
cached() { fincore --bytes --noheadings --output RES "$1" 2>/dev/null | tr -d ' ' || echo unknown; }

echo "== configuration"
check "the share has direct io, io poll and io sqpoll" grep -q 'io sqpoll = yes' "$CONF"
POLLABLE=0
if [ "$(cat "/sys/dev/block/$(stat -c '%Hd:%Ld' "$DATA_DIR")/queue/io_poll" 2>/dev/null)" = 1 ]; then POLLABLE=1; fi
if [ "$POLLABLE" = 0 ]; then
    check "io poll on a device without poll queues is logged as a fallback" \
        grep -q 'io poll = yes, but .*completing by interrupt' "$LOG"
fi

echo "== 64 MiB put/get with O_DIRECT"
expect_ok "put 64 MiB" smb data -c "put $WORK/big.bin big.bin"
RES=$(cached "$DATA_DIR/big.bin")
log "page cache holds $RES of 67108864 bytes of the uploaded file"
if command -v fincore >/dev/null && [ "$RES" != unknown ]; then
    # Aligned writes went around the page cache (a buffered upload leaves all 64 MiB cached).
    check "the uploaded data bypassed the page cache (cached: $RES bytes)" test "$RES" -lt 8388608
fi
check "server copy has the same sha256" test "$(sum "$WORK/big.bin")" = "$(sum "$DATA_DIR/big.bin")"
# Drop what sha256sum just cached, so that the download reads the disk again.
dd if=/dev/null of="$DATA_DIR/big.bin" oflag=nocache conv=notrunc,fdatasync status=none 2>/dev/null || true
expect_ok "get 64 MiB" smb data -c "get big.bin $WORK/big.back"
check "downloaded copy has the same sha256" test "$(sum "$WORK/big.bin")" = "$(sum "$WORK/big.back")"

echo "== unaligned sizes (the buffered fallback)"
expect_ok "put a 1000003-byte file" smb data -c "put $WORK/odd.bin odd.bin"
check "server copy of the odd size is intact" cmp -s "$WORK/odd.bin" "$DATA_DIR/odd.bin"
expect_ok "get it back" smb data -c "get odd.bin $WORK/odd.back"
check "downloaded odd size is intact" cmp -s "$WORK/odd.bin" "$WORK/odd.back"
expect_ok "append with reput semantics (smbclient 'put' over an existing file)" \
    smb data -c "put $WORK/odd.bin big.bin"
check "overwritten file has the new content" cmp -s "$WORK/odd.bin" "$DATA_DIR/big.bin"

finish
