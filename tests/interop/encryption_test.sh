#!/bin/bash
# SMB3 encryption with Debian's smbclient (Samba 4.17) against daxsmbd on a loopback port: each
# of the four ciphers forced on the client, a put/get round trip checked with sha256, a share
# with "smb encrypt = required" that works encrypted and refuses clients that cannot encrypt.
#
#   tests/interop/encryption_test.sh                       # against build/daxsmbd
#   INTEROP_SERVER=samba tests/interop/encryption_test.sh  # the same checks against Samba's smbd
#
# How the cipher is forced and verified (smbclient 4.17):
#   --client-protection=encrypt                           the client encrypts everything;
#   --option='client smb3 encryption algorithms=C'        offers only cipher C in the 3.1.1
#                                                          ENCRYPTION_CAPABILITIES context;
#   -d 10 prints "smb2_signing_encrypt_pdu: Encrypted SMB2 message" for every request sealed.
# Evidence that C itself was used: daxsmbd logs the session's cipher ("cipher AES-128-CCM"),
# and a server restricted to AES-256-GCM ("server smb3 encryption algorithms") refuses a client
# that forces any other cipher while accepting one that forces AES-256-GCM.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

interop_setup

# A share that only encrypted sessions may use (Samba syntax, so it works for both servers).
printf '\n[sealed]\n    path = %s\n    read only = no\n    smb encrypt = required\n' \
    "$DATA_DIR" >>"$CONF"
restart_server || die "cannot restart with [sealed]"

WORK=$TESTDIR/client
mkdir -p "$WORK"
head -c 8M /dev/urandom >"$WORK/blob.bin"
sum() { sha256sum "$1" | cut -d' ' -f1; }

for c in AES-128-CCM AES-128-GCM AES-256-CCM AES-256-GCM; do
    echo "== $c"
    rm -f "$WORK/back.bin"
    before=$(grep -c "cipher $c" "$LOG" || true)
    expect_match "put/get forced to $c, requests encrypted" \
        'smb2_signing_encrypt_pdu: Encrypted SMB2 message' \
        smb data -m SMB3 --client-protection=encrypt \
        --option="client smb3 encryption algorithms=$c" -d 10 \
        -c "put $WORK/blob.bin enc-$c.bin; get enc-$c.bin $WORK/back.bin"
    check "$c: the file came back unchanged (sha256)" \
        test "$(sum "$WORK/blob.bin")" = "$(sum "$WORK/back.bin")"
    check "$c: stored unchanged on the server" \
        test "$(sum "$WORK/blob.bin")" = "$(sum "$DATA_DIR/enc-$c.bin")"
    if [ "$INTEROP_SERVER" = daxsmbd ]; then
        after=$(grep -c "cipher $c" "$LOG" || true)
        check "$c: the server logged a session with cipher $c" test "$after" -gt "$before"
    fi
done

echo "== the share that requires encryption"
rm -f "$WORK/back.bin"
expect_ok "[sealed] works encrypted (put/get)" \
    smb sealed -m SMB3 --client-protection=encrypt \
    -c "put $WORK/blob.bin sealed.bin; get sealed.bin $WORK/back.bin"
check "[sealed]: the file came back unchanged (sha256)" \
    test "$(sum "$WORK/blob.bin")" = "$(sum "$WORK/back.bin")"
# smbclient 4.17 follows SMB2_SHAREFLAG_ENCRYPT_DATA even with --client-protection=off/sign
# (it encrypts the requests on that tree, against Samba's smbd as well): such a client gets in,
# but only encrypted. A client that cannot encrypt (SMB 2.1) is refused (MS-SMB2 3.3.5.7).
for p in off sign; do
    expect_match "[sealed] with --client-protection=$p works, encrypted by the share's demand" \
        'smb2_signing_encrypt_pdu: Encrypted SMB2 message' \
        smb sealed -m SMB3 --client-protection=$p -d 10 -c 'ls'
done
expect_fail "[sealed] refuses an SMB 2.1 client (no encryption)" 'NT_STATUS_ACCESS_DENIED' \
    smb sealed -m SMB2 -c 'ls'
expect_ok "[data] still works unencrypted" smb data -m SMB3 --client-protection=sign -c 'ls'

if [ "$INTEROP_SERVER" = daxsmbd ]; then
    echo "== a server restricted to AES-256-GCM"
    sed -i 's/^\[global\]$/[global]\n    server smb3 encryption algorithms = AES-256-GCM/' "$CONF"
    restart_server || die "cannot restart with one cipher"
    expect_ok "forced AES-256-GCM works" smb data -m SMB3 --client-protection=encrypt \
        --option='client smb3 encryption algorithms=AES-256-GCM' -c 'ls'
    for c in AES-128-CCM AES-128-GCM AES-256-CCM; do
        expect_fail "forced $c finds no common cipher (smbclient fails)" '' \
            smb data -m SMB3 --client-protection=encrypt \
            --option="client smb3 encryption algorithms=$c" -c 'ls'
    done
fi

finish
