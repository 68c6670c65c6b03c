#!/bin/bash
# NT security descriptors through third-party clients (README "NT ACLs"): Debian's smbcacls and
# smbclient (Samba 4.17) against daxsmbd on a loopback port.
#   - smbcacls shows the descriptor synthesized from the POSIX owner, group and mode;
#   - smbcacls --set / --add / --delete change the DACL, which is stored (the xattr
#     user.daxsmbd.ntacl appears) and read back by a new connection;
#   - a stored DACL that denies alice is enforced when she opens the file (smbclient get);
#   - the same on a directory, inheritance flags kept.
# (smbclient 4.17's allinfo does not print security descriptors, so it is not used here.)
# smbcacls 4.17 has no port option and ignores "smb ports": it runs with the LD_PRELOAD shim
# port_redirect.c, which sends its connect() to 127.0.0.1:445 to the server's high port.
# --numeric keeps smbcacls from resolving SIDs through LSA (daxsmbd serves srvsvc only).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v smbcacls >/dev/null || die "smbcacls is not installed (package smbclient)"
interop_setup

cacls_setup

echo "hello acl" >"$DATA_DIR/f.txt"
chmod 0644 "$DATA_DIR/f.txt"
uid=$(stat -c %u "$DATA_DIR/f.txt")
# alice's SID as the server maps her: S-1-22-1-<the uid of her user database entry>.
ALICE_UID=$("$DAXSMBD_ADMIN" -s "$CONF" user list | sed -n "s/^$SMB_USER.*uid=\([0-9]*\).*/\1/p")
[ -n "$ALICE_UID" ] || die "no uid for $SMB_USER in the user database"
ALICE=S-1-22-1-$ALICE_UID
gid=$(stat -c %g "$DATA_DIR/f.txt")

echo "== synthesized descriptor"
expect_match "smbcacls shows the POSIX owner" "OWNER:S-1-22-1-$uid" cacls f.txt
check "... and group" grep -q "GROUP:S-1-22-2-$gid" <<<"$OUT"
# --numeric prints the ACE type as a number: 0 ACCESS_ALLOWED, 1 ACCESS_DENIED.
check "... owner rw- as READ|WRITE rights" grep -q "ACL:S-1-22-1-$uid:0/0x0/0x0012019f" <<<"$OUT"
check "... group r-- as READ" grep -q "ACL:S-1-22-2-$gid:0/0x0/0x00120089" <<<"$OUT"
check "... Everyone r-- as READ" grep -q "ACL:S-1-1-0:0/0x0/0x00120089" <<<"$OUT"
check "nothing is stored by a query" lacks "ntacl" "$(getfattr -d -m - "$DATA_DIR/f.txt" 2>&1)"

echo "== set, add, delete"
expect_ok "smbcacls --set a DACL" cacls f.txt \
    --set "ACL:$ALICE:ALLOWED/0x0/0x001f01ff,ACL:S-1-1-0:ALLOWED/0x0/0x00120089"
check "the descriptor is stored in user.daxsmbd.ntacl" \
    getfattr -n user.daxsmbd.ntacl "$DATA_DIR/f.txt"
expect_match "a new connection reads it back" "ACL:S-1-1-0:0/0x0/0x00120089" cacls f.txt
check "... with the other ACE" grep -q "ACL:$ALICE:0/0x0/0x001f01ff" <<<"$OUT"
check "... and nothing else" test "$(grep -c '^ACL:' <<<"$OUT")" -eq 2
check "... and the owner kept" grep -q "OWNER:S-1-22-1-$uid" <<<"$OUT"
expect_ok "smbcacls --add an ACE" cacls f.txt --add "ACL:S-1-5-11:DENIED/0x0/0x00000002"
expect_match "the added ACE is there" "ACL:S-1-5-11:1/0x0/0x00000002" cacls f.txt
expect_fail "the DENIED write for Authenticated Users is enforced" "NT_STATUS_ACCESS_DENIED" \
    smb data -c "put $TESTDIR/client.conf f.txt"
expect_ok "smbcacls --delete it" cacls f.txt --delete "ACL:S-1-5-11:DENIED/0x0/0x00000002"
expect_ok "query after delete" cacls f.txt
check "the deleted ACE is gone" lacks "S-1-5-11" "$OUT"

echo "== enforcement of a stored DACL"
expect_ok "get while alice is allowed" smb data -c "get f.txt $TESTDIR/f.back"
check "content read" grep -q "hello acl" "$TESTDIR/f.back"
expect_ok "smbcacls --set a DACL without alice" cacls f.txt --set "ACL:S-1-5-18:ALLOWED/0x0/0x001f01ff"
expect_fail "get is now refused" "NT_STATUS_ACCESS_DENIED" smb data -c "get f.txt $TESTDIR/f.back2"
expect_fail "reading the descriptor too (alice is not the owner: no READ_CONTROL)" \
    "NT_STATUS_ACCESS_DENIED" cacls f.txt
expect_ok "delete works through the share root's FILE_DELETE_CHILD" smb data -c "del f.txt"
check "deleted on the server" test ! -e "$DATA_DIR/f.txt"

echo "== directories"
mkdir "$DATA_DIR/dir"
expect_ok "smbcacls --set on a directory" cacls dir \
    --set "ACL:$ALICE:ALLOWED/0x3/0x001f01ff,ACL:S-1-1-0:ALLOWED/0x0/0x001200a9"
expect_match "read back with the inheritance flags" "ACL:$ALICE:0/0x3/0x001f01ff" cacls dir
expect_ok "the directory is still listed" smb data -c 'ls dir\*'

finish
