#!/bin/bash
# Users act as themselves on disk (README "Identity"): every file-system operation of a session
# runs as the uid/gid of its user database entry plus the supplementary groups of that uid's
# Unix account, so the kernel's permission checks are the users' own. Checked with Debian's
# smbclient (and smbcacls) against daxsmbd on a loopback port, every result looked at on disk:
#   1. files and directories alice creates are owned by her account's uid and primary gid;
#   2. bob cannot read, overwrite or delete alice's 0600 file (NT_STATUS_ACCESS_DENIED), alice can;
#   3. bob cannot create files or directories in alice's 0755 directory; in a 0777 one he can,
#      and what he creates is his;
#   4. carol, whose account is in alice's group as a supplementary group, gets alice's group
#      rights (read of 0640, write of 0660) and no more; bob, outside the group, gets none;
#   5. a stored NT ACL applies on top of the POSIX permissions (a DACL without bob denies him a
#      file that mode 0644 would let him read), and cannot lift them (daxsmbd only: Samba maps a
#      DACL into the file's POSIX ACL, so there the DACL does change what the kernel allows);
#   6. daxsmbd-admin refuses entries without a Unix identity (no account, or --uid without --gid
#      and no account for that uid) and entries acting as uid 0 unless `admin users` lists them;
#   7. the server refuses a logon of a uid-0 entry not in `admin users` (NT_STATUS_ACCESS_DENIED,
#      "uid 0" in its log); listed, it logs on and its files are root's;
#   8. anonymous sessions (`map to guest = bad user`) act as `guest account` on a `guest ok`
#      share, and reach no other share.
# Each user has a Unix account of its own made by the test (lib.sh make_unix_account), so
# nothing on the machine is assumed; the test runs as root (useradd, chown, the server's
# setfsuid).
#
#   tests/interop/identity_test.sh                       # against build/daxsmbd
#   INTEROP_SERVER=samba tests/interop/identity_test.sh  # the same checks (but 6, 7 and the
#                                                        # second half of 5) against Samba
# smbcacls 4.17 has no port option: it runs under the LD_PRELOAD shim port_redirect.c, as in
# acl_test.sh.
# shellcheck disable=SC2317  # functions run through expect_* and check
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || die "must run as root (useradd, chown)"
command -v smbcacls >/dev/null || die "smbcacls is not installed (package smbclient)"
interop_setup

WORK=$TESTDIR/client
mkdir -p "$WORK"
echo "alice's secret $$" >"$WORK/alice.txt"
echo "bob's content $$" >"$WORK/bob.txt"
echo "carol's content $$" >"$WORK/carol.txt"

# smbclient //127.0.0.1/SHARE as another user (smb() of lib.sh is alice).
smb_as() { # USER PASSWORD SHARE [smbclient args...]
    local user=$1 pass=$2 share=$3
    shift 3
    timeout -k 5 300 smbclient --configfile="$TESTDIR/client.conf" "//127.0.0.1/$share" \
        -p "$PORT" -U "$user%$pass" "$@"
}
# An anonymous (null) session: empty user name, no password. (Plain -N first tries the local
# user name, root, without a password, and only after that logon failure an anonymous one:
# used once below; the failures would otherwise slow every later logon down by the server's
# logon failure delay.)
smb_anon() { # SHARE [smbclient args...]
    local share=$1
    shift
    timeout -k 5 300 smbclient --configfile="$TESTDIR/client.conf" "//127.0.0.1/$share" \
        -p "$PORT" -U % -N "$@"
}
set_global() { # KEY VALUE: (re)sets a [global] key in the server's configuration
    sed -i "/^    $1 = /d" "$CONF"
    sed -i "/^\[global\]/a\\    $1 = $2" "$CONF"
}
owner_is() { # PATH UID GID: PATH exists and is owned by UID:GID
    [ "$(stat -c %u:%g "$1" 2>/dev/null)" = "$2:$3" ]
}
# Registers SMB user NAME acting as the existing Unix account ACCT (add_user makes the account
# itself; this one is for accounts made with extra useradd arguments, like carol's -G).
register_user() { # NAME PASSWORD ACCT
    local name=$1 pass=$2 acct=$3 groups
    if [ "$INTEROP_SERVER" = samba ]; then
        # Samba looks the groups up by the SMB user's name: an alias account with the same ids
        # and the same supplementary groups.
        groups=$(id -Gn "$acct" | tr ' ' '\n' | grep -vx "$(id -gn "$acct")" | paste -sd, -)
        id "$name" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin -o \
            -u "$(id -u "$acct")" -g "$(id -g "$acct")" ${groups:+-G "$groups"} "$name" || return 1
        UNIX_ACCOUNTS+=("$name")
        printf '%s\n%s\n' "$pass" "$pass" | smbpasswd -c "$CONF" -a -s "$name" >/dev/null
    else
        printf '%s\n' "$pass" | "$DAXSMBD_ADMIN" -s "$CONF" user add "$name" \
            --uid "$(id -u "$acct")" --gid "$(id -g "$acct")"
    fi
}

ALICE_ACCT=$(unix_account_of alice)
A_UID=$(id -u "$ALICE_ACCT")
A_GID=$(id -g "$ALICE_ACCT")
add_user bob pw2 || die "cannot add user bob"
B_UID=$(id -u "$(unix_account_of bob)")
B_GID=$(id -g "$(unix_account_of bob)")
# carol: her own account whose supplementary group is alice's primary group.
make_unix_account carol -G "$(id -gn "$ALICE_ACCT")" || die "cannot make carol's account"
CAROL_ACCT=$ACCOUNT
register_user carol pw3 "$CAROL_ACCT" || die "cannot add user carol"

echo "== 1. alice's files are hers"
expect_ok "alice puts a file" smb data -c "put $WORK/alice.txt a1.txt"
check "a1.txt is on disk with her content" cmp -s "$WORK/alice.txt" "$DATA_DIR/a1.txt"
check "a1.txt is owned by alice's uid and primary gid ($A_UID:$A_GID)" \
    owner_is "$DATA_DIR/a1.txt" "$A_UID" "$A_GID"
expect_ok "alice makes a directory" smb data -c "mkdir adir"
check "adir is owned by alice's uid and primary gid" owner_is "$DATA_DIR/adir" "$A_UID" "$A_GID"
expect_ok "alice puts a file into it" smb data -c "put $WORK/alice.txt adir\\a2.txt"
check "adir/a2.txt is alice's" owner_is "$DATA_DIR/adir/a2.txt" "$A_UID" "$A_GID"

echo "== 2. bob and alice's 0600 file"
# The share root is alice's with mode 0755 (lib.sh): bob can list it but not write in it.
cp "$WORK/alice.txt" "$DATA_DIR/secret.txt"
chown_to alice "$DATA_DIR/secret.txt"
chmod 0600 "$DATA_DIR/secret.txt"
expect_ok "bob logs on and lists the share" smb_as bob pw2 data -c "ls"
check "... and sees secret.txt" grep -q 'secret\.txt' <<<"$OUT"
expect_fail "bob's get of secret.txt is refused" 'NT_STATUS_ACCESS_DENIED' \
    smb_as bob pw2 data -c "get secret.txt $WORK/secret.bob"
check "... and bob got none of it" file_lacks "alice's secret" "$WORK/secret.bob"
expect_fail "bob's put over secret.txt is refused" 'NT_STATUS_ACCESS_DENIED' \
    smb_as bob pw2 data -c "put $WORK/bob.txt secret.txt"
check "... and secret.txt is unchanged" cmp -s "$WORK/alice.txt" "$DATA_DIR/secret.txt"
check "... and still alice's" owner_is "$DATA_DIR/secret.txt" "$A_UID" "$A_GID"
# Deleting a file is a write of its directory (alice's, 0755), whatever the file's mode.
expect_fail "bob's del of secret.txt is refused" 'NT_STATUS_ACCESS_DENIED' \
    smb_as bob pw2 data -c "del secret.txt"
check "... and secret.txt is still there" test -f "$DATA_DIR/secret.txt"
expect_ok "alice's get of secret.txt works" smb data -c "get secret.txt $WORK/secret.alice"
check "... with her content" cmp -s "$WORK/alice.txt" "$WORK/secret.alice"

echo "== 3. bob and alice's directories"
mkdir "$DATA_DIR/closed"
chown_to alice "$DATA_DIR/closed"
chmod 0755 "$DATA_DIR/closed"
expect_fail "bob's put into alice's 0755 directory is refused" 'NT_STATUS_ACCESS_DENIED' \
    smb_as bob pw2 data -c "put $WORK/bob.txt closed\\b1.txt"
check "... and nothing was created" test ! -e "$DATA_DIR/closed/b1.txt"
expect_fail "bob's mkdir in it is refused" 'NT_STATUS_ACCESS_DENIED' \
    smb_as bob pw2 data -c "mkdir closed\\bdir"
check "... and nothing was created" test ! -e "$DATA_DIR/closed/bdir"
expect_ok "alice's put into her 0755 directory works" smb data -c "put $WORK/alice.txt closed\\a3.txt"
mkdir "$DATA_DIR/open"
chown_to alice "$DATA_DIR/open"
chmod 0777 "$DATA_DIR/open"
expect_ok "bob's put into alice's 0777 directory works" \
    smb_as bob pw2 data -c "put $WORK/bob.txt open\\b2.txt"
check "... with his content" cmp -s "$WORK/bob.txt" "$DATA_DIR/open/b2.txt"
check "... and the file is bob's ($B_UID:$B_GID)" owner_is "$DATA_DIR/open/b2.txt" "$B_UID" "$B_GID"
expect_ok "bob's mkdir in it works" smb_as bob pw2 data -c "mkdir open\\bdir"
check "... and the directory is bob's" owner_is "$DATA_DIR/open/bdir" "$B_UID" "$B_GID"

echo "== 4. supplementary groups"
check "carol's account has alice's group as a supplementary group" \
    grep -qw "$A_GID" <<<"$(id -G "$CAROL_ACCT")"
check "... and not as its primary group" test "$(id -g "$CAROL_ACCT")" != "$A_GID"
cp "$WORK/alice.txt" "$DATA_DIR/group-r.txt"
chown_to alice "$DATA_DIR/group-r.txt"
chmod 0640 "$DATA_DIR/group-r.txt"
expect_ok "carol gets alice's 0640 file through the group" \
    smb_as carol pw3 data -c "get group-r.txt $WORK/group-r.carol"
check "... with its content" cmp -s "$WORK/alice.txt" "$WORK/group-r.carol"
expect_fail "bob, not in the group, is refused" 'NT_STATUS_ACCESS_DENIED' \
    smb_as bob pw2 data -c "get group-r.txt $WORK/group-r.bob"
expect_fail "carol's put over it is refused (group r--)" 'NT_STATUS_ACCESS_DENIED' \
    smb_as carol pw3 data -c "put $WORK/carol.txt group-r.txt"
check "... and it is unchanged" cmp -s "$WORK/alice.txt" "$DATA_DIR/group-r.txt"
cp "$WORK/alice.txt" "$DATA_DIR/group-rw.txt"
chown_to alice "$DATA_DIR/group-rw.txt"
chmod 0660 "$DATA_DIR/group-rw.txt"
expect_ok "carol's put over alice's 0660 file works (group rw-)" \
    smb_as carol pw3 data -c "put $WORK/carol.txt group-rw.txt"
check "... with carol's content" cmp -s "$WORK/carol.txt" "$DATA_DIR/group-rw.txt"
check "... and the file is still alice's" owner_is "$DATA_DIR/group-rw.txt" "$A_UID" "$A_GID"
expect_fail "bob's put over it is refused" 'NT_STATUS_ACCESS_DENIED' \
    smb_as bob pw2 data -c "put $WORK/bob.txt group-rw.txt"
check "... and it is unchanged" cmp -s "$WORK/carol.txt" "$DATA_DIR/group-rw.txt"

echo "== 5. stored NT ACLs on top of the POSIX permissions"
cacls_setup
cp "$WORK/alice.txt" "$DATA_DIR/nt-only-alice.txt"
chown_to alice "$DATA_DIR/nt-only-alice.txt"
chmod 0644 "$DATA_DIR/nt-only-alice.txt"
expect_ok "bob reads alice's 0644 file before it has a DACL" \
    smb_as bob pw2 data -c "get nt-only-alice.txt $WORK/nt1.bob"
expect_ok "alice sets a DACL that allows only her" cacls nt-only-alice.txt \
    --set "ACL:S-1-22-1-$A_UID:ALLOWED/0x0/0x001f01ff"
expect_fail "bob's get is now refused by the DACL" 'NT_STATUS_ACCESS_DENIED' \
    smb_as bob pw2 data -c "get nt-only-alice.txt $WORK/nt1.bob2"
expect_ok "alice's get still works" smb data -c "get nt-only-alice.txt $WORK/nt1.alice"
check "... with her content" cmp -s "$WORK/alice.txt" "$WORK/nt1.alice"
if [ "$INTEROP_SERVER" = daxsmbd ]; then
    # daxsmbd keeps a DACL beside the mode: granting Everyone everything lifts nothing, as bob
    # still opens the file as himself.
    cp "$WORK/alice.txt" "$DATA_DIR/nt-everyone.txt"
    chown_to alice "$DATA_DIR/nt-everyone.txt"
    chmod 0600 "$DATA_DIR/nt-everyone.txt"
    expect_ok "alice sets a DACL granting Everyone full control on her 0600 file" \
        cacls nt-everyone.txt --set "ACL:S-1-1-0:ALLOWED/0x0/0x001f01ff"
    check "... the mode is unchanged" test "$(stat -c %a "$DATA_DIR/nt-everyone.txt")" = 600
    expect_fail "bob's get is still refused by the file's mode" 'NT_STATUS_ACCESS_DENIED' \
        smb_as bob pw2 data -c "get nt-everyone.txt $WORK/nt2.bob"
    expect_fail "bob's put over it too" 'NT_STATUS_ACCESS_DENIED' \
        smb_as bob pw2 data -c "put $WORK/bob.txt nt-everyone.txt"
    check "... and it is unchanged" cmp -s "$WORK/alice.txt" "$DATA_DIR/nt-everyone.txt"
fi

if [ "$INTEROP_SERVER" = daxsmbd ]; then
    echo "== 6. daxsmbd-admin: every entry is a Unix identity, uid 0 only for admin users"
    admin_add() { # NAME PASSWORD [user add args...]: daxsmbd-admin user add, password on stdin
        local name=$1 pass=$2
        shift 2
        printf '%s\n' "$pass" | "$DAXSMBD_ADMIN" -s "$CONF" user add "$name" "$@"
    }
    GHOST=$(unix_account_of ghost) # the test's prefix: no such account unless we made one
    check "there is no Unix account $GHOST" test -z "$(getent passwd "$GHOST")"
    expect_fail "user add $GHOST (no account, no --uid) fails" '' admin_add "$GHOST" pw
    check "... saying there is no Unix account" grep -q "no Unix account" <<<"$OUT"
    expect_ok "user list" "$DAXSMBD_ADMIN" -s "$CONF" user list
    check "... lacks $GHOST" lacks "^$GHOST\\b" "$OUT"
    check "... and lists alice with her account's uid" grep -Eq "^alice\\b.*uid=$A_UID\\b" <<<"$OUT"
    free_uid=
    for u in $(seq 61000 61999); do
        if ! getent passwd "$u" >/dev/null; then
            free_uid=$u
            break
        fi
    done
    [ -n "$free_uid" ] || die "no unused uid in 61000..61999"
    expect_fail "user add with --uid $free_uid (no account) and no --gid fails" '' \
        admin_add "$GHOST" pw --uid "$free_uid"
    check "... saying why" grep -q "gid" <<<"$OUT"
    expect_fail "user add rooty --uid 0 --gid 0 fails (not in admin users)" '' \
        admin_add rooty pwr --uid 0 --gid 0
    check "... saying it would act as uid 0" grep -q "uid 0" <<<"$OUT"
    expect_ok "user list" "$DAXSMBD_ADMIN" -s "$CONF" user list
    check "... lacks $GHOST and rooty" lacks "^($GHOST|rooty)\\b" "$OUT"
    set_global "admin users" rooty
    expect_ok "with 'admin users = rooty', user add rooty --uid 0 --gid 0 works" \
        admin_add rooty pwr --uid 0 --gid 0
    expect_ok "user list" "$DAXSMBD_ADMIN" -s "$CONF" user list
    check "... lists rooty with uid 0" grep -Eq "^rooty\\b.*uid=0\\b" <<<"$OUT"

    echo "== 7. a uid-0 entry logs on only while it is in admin users"
    sed -i '/^    admin users = /d' "$CONF"
    restart_server || die "cannot restart daxsmbd without admin users"
    expect_fail "rooty's logon is refused" 'NT_STATUS_ACCESS_DENIED' \
        smb_as rooty pwr data -c "ls"
    check "the server log says why (uid 0)" grep -Eq "rooty.*uid 0" "$LOG"
    expect_fail "... and rooty cannot put a file" 'NT_STATUS_ACCESS_DENIED' \
        smb_as rooty pwr data -c "put $WORK/alice.txt rooty-refused.txt"
    check "... nothing was created" test ! -e "$DATA_DIR/rooty-refused.txt"
    expect_ok "alice still logs on" smb data -c "ls"
    set_global "admin users" rooty
    restart_server || die "cannot restart daxsmbd with admin users"
    expect_ok "with 'admin users = rooty' back, rooty logs on and puts a file" \
        smb_as rooty pwr data -c "put $WORK/alice.txt rooty.txt"
    check "rooty.txt is owned by uid 0" owner_is "$DATA_DIR/rooty.txt" 0 0
fi

echo "== 8. anonymous sessions act as the guest account"
make_unix_account guest || die "cannot make the guest account"
GUEST=$ACCOUNT
G_UID=$(id -u "$GUEST")
G_GID=$(id -g "$GUEST")
PUB_DIR=$TESTDIR/pub
mkdir -p "$PUB_DIR"
chmod 1777 "$PUB_DIR"
set_global "map to guest" "bad user"
set_global "guest account" "$GUEST"
cat >>"$CONF" <<EOF

[pub]
    path = $PUB_DIR
    read only = no
    guest ok = yes
EOF
restart_server || die "cannot restart $INTEROP_SERVER with the guest share"
expect_ok "an anonymous put into the guest ok share works" \
    smb_anon pub -c "put $WORK/bob.txt anon.txt"
check "... with the content" cmp -s "$WORK/bob.txt" "$PUB_DIR/anon.txt"
check "... and the file is the guest account's ($G_UID:$G_GID)" \
    owner_is "$PUB_DIR/anon.txt" "$G_UID" "$G_GID"
expect_ok "an anonymous mkdir there works" smb_anon pub -c "mkdir anondir"
check "... and the directory is the guest account's" owner_is "$PUB_DIR/anondir" "$G_UID" "$G_GID"
expect_ok "plain smbclient -N (root without password, then anonymous) puts a file too" \
    timeout -k 5 300 smbclient -N "//127.0.0.1/pub" -p "$PORT" --configfile="$TESTDIR/client.conf" \
    -c "put $WORK/bob.txt anon-n.txt"
check "... and it is the guest account's" owner_is "$PUB_DIR/anon-n.txt" "$G_UID" "$G_GID"
expect_ok "alice's put into the same share works" smb pub -c "put $WORK/alice.txt alice-pub.txt"
check "... and her file is hers, not the guest's" owner_is "$PUB_DIR/alice-pub.txt" "$A_UID" "$A_GID"
# The guest is not alice: her 0644 file there is read-only to it.
chmod 0644 "$PUB_DIR/alice-pub.txt" 2>/dev/null || true
expect_fail "an anonymous put over alice's file is refused" 'NT_STATUS_ACCESS_DENIED' \
    smb_anon pub -c "put $WORK/bob.txt alice-pub.txt"
check "... and it is unchanged" cmp -s "$WORK/alice.txt" "$PUB_DIR/alice-pub.txt"
expect_fail "an anonymous session cannot connect to data (no guest ok)" 'NT_STATUS_ACCESS_DENIED' \
    smb_anon data -c "ls"

finish
