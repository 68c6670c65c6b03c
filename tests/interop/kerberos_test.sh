#!/bin/bash
# Kerberos logons with a real MIT KDC: a private realm on loopback (krb5kdc on a free port, its
# database, stash and ccache in the test's temp dir), the service principal cifs/fileserver.daxsmbd.test in a
# keytab that daxsmbd reads, and Debian's smbclient with --use-kerberos=required:
#   - share listing, put and get (sha256 compared) as the Kerberos user, mapped to the local
#     user of the same name in the realm;
#   - an explicit mapping (kerberos user map) of a principal to another local user;
#   - refused: a principal without local user, a stale keytab (key version/key no longer the
#     KDC's), a ticket for another service (cifs/other.daxsmbd.test, not in the server's keytab),
#     and an expired ticket; each with NT_STATUS_LOGON_FAILURE at the client and the Kerberos
#     reason in the server log;
#   - `server auth methods = ntlm` takes Kerberos out of the NEGOTIATE blob, `kerberos` alone
#     refuses NTLM.
# Names: smbclient asks the KDC for cifs/<host> with <host> as typed in //host/share, and `-I`
# gives the address to connect to; so //fileserver.daxsmbd.test/data -I 127.0.0.1 needs no name
# resolution and nothing in /etc is touched (smbclient refuses Kerberos to IP addresses and to
# the name "localhost").
#
#   tests/interop/kerberos_test.sh     (KEEP=1 keeps the temp dir, LOG_LEVEL=2 a verbose server)
# shellcheck disable=SC2317  # functions run through the EXIT trap and expect_*
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

for tool in krb5kdc kdb5_util kadmin.local kinit; do
    if ! command -v "$tool" >/dev/null && [ ! -x "/usr/sbin/$tool" ]; then
        echo "$TEST_NAME: SKIP: $tool is not installed (krb5-kdc, krb5-admin-server, krb5-user)"
        exit 77
    fi
done
export PATH=$PATH:/usr/sbin

interop_setup
REALM=DAXSMBD.TEST
KRB=$TESTDIR/krb5
mkdir -p "$KRB"
KDC_PORT=$(free_port) || die "no free port for the KDC"
KDC_PID=

# Every Kerberos file of this test lives in $KRB: the environment points the libraries (KDC,
# kadmin.local, kinit, smbclient, daxsmbd) there. Realm blocks span several lines (a one-line
# block is silently ignored by the MIT profile parser). clockskew = 2 lets an expired ticket
# be refused after a short wait (the default allows 5 minutes).
cat >"$KRB/krb5.conf" <<EOF
[libdefaults]
    default_realm = $REALM
    dns_lookup_kdc = false
    dns_lookup_realm = false
    rdns = false
    dns_canonicalize_hostname = false
    clockskew = 2
    udp_preference_limit = 1

[realms]
    $REALM = {
        kdc = 127.0.0.1:$KDC_PORT
    }

[domain_realm]
    .daxsmbd.test = $REALM
EOF
cat >"$KRB/kdc.conf" <<EOF
[kdcdefaults]
    kdc_ports = $KDC_PORT
    kdc_tcp_ports = $KDC_PORT

[realms]
    $REALM = {
        database_name = $KRB/principal
        key_stash_file = $KRB/stash
        acl_file = $KRB/kadm5.acl
        max_life = 1h
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }

[logging]
    kdc = FILE:$KRB/kdc.log
EOF
: >"$KRB/kadm5.acl"
export KRB5_CONFIG=$KRB/krb5.conf KRB5_KDC_PROFILE=$KRB/kdc.conf KRB5CCNAME=FILE:$KRB/ccache
# The replay cache of the acceptor (daxsmbd) in the temp dir too.
export KRB5RCACHEDIR=$KRB

stop_kdc() {
    if [ -n "$KDC_PID" ] && kill -0 "$KDC_PID" 2>/dev/null; then
        kill -TERM "$KDC_PID" 2>/dev/null || true
        wait "$KDC_PID" 2>/dev/null || true
    fi
    KDC_PID=
}
cleanup_all() {
    local rc=$?
    stop_kdc
    if [ "$rc" -ne 0 ] || [ "$FAILS" -ne 0 ]; then
        [ -s "$KRB/kdc.log" ] && tail -n 20 "$KRB/kdc.log" | sed 's/^/  kdc | /' >&2
    fi
    set +e  # the exit status below must reach _interop_cleanup, not stop this handler
    (exit "$rc")
    _interop_cleanup
}
trap cleanup_all EXIT

kadm() { kadmin.local -r "$REALM" -q "$*" >>"$KRB/kadmin.log" 2>&1; }

echo "== realm $REALM on 127.0.0.1:$KDC_PORT"
kdb5_util create -s -r "$REALM" -P "master-$$" >"$KRB/kdb5_util.log" 2>&1 ||
    die "kdb5_util create failed: $(cat "$KRB/kdb5_util.log")"
[ -f "$KRB/principal" ] || die "the KDC database is not in $KRB (profile not read?)"
kadm "addprinc -pw alice-krb-pw alice" || die "cannot add alice"
kadm "addprinc -pw bob-krb-pw bob" || die "cannot add bob"
kadm "addprinc -pw carol-krb-pw carol" || die "cannot add carol"
kadm "addprinc -pw ext-pw extern/admin" || die "cannot add extern/admin"
SVC=cifs/fileserver.daxsmbd.test
kadm "addprinc -randkey $SVC" || die "cannot add $SVC"
kadm "addprinc -randkey cifs/other.daxsmbd.test" || die "cannot add cifs/other.daxsmbd.test"
# The stale keytab holds the service's first key; the key is then changed (new key version) and
# the current keytab exported.
kadm "ktadd -k $KRB/stale.keytab $SVC" || die "ktadd stale"
kadm "cpw -randkey $SVC" || die "cpw -randkey"
kadm "ktadd -k $KRB/server.keytab -norandkey $SVC" || die "ktadd server"
krb5kdc -n -P "$KRB/kdc.pid" >>"$KRB/kdc.log" 2>&1 &
KDC_PID=$!
for _ in $(seq 1 100); do port_listening "$KDC_PORT" && break; sleep 0.1; done
port_listening "$KDC_PORT" || die "krb5kdc does not listen on $KDC_PORT"

# daxsmbd: Kerberos and NTLM, users alice (exists with a password already), bob (Kerberos-only,
# added without password) and the map: extern/admin@REALM -> carol.
printf 'carol = extern/admin@%s\n' "$REALM" >"$KRB/usermap"
for u in bob carol; do
    make_unix_account "$u" || die "cannot make a Unix account for $u"
    acct=$ACCOUNT
    "$DAXSMBD_ADMIN" -s "$CONF" user add "$u" --no-password --uid "$(id -u "$acct")" \
        --gid "$(id -g "$acct")" || die "cannot add $u"
done
set_global() { # KEY VALUE: (re)sets a [global] key in the server's configuration
    sed -i "/^    $1 = /d" "$CONF"
    sed -i "/^\[global\]/a\\    $1 = $2" "$CONF"
}
set_global "realm" "$REALM"
set_global "kerberos keytab file" "$KRB/server.keytab"
set_global "kerberos user map" "$KRB/usermap"
restart_server || die "daxsmbd does not start with Kerberos"

# smbclient as the principal in the ccache (no password, no NTLM fallback).
HOST=fileserver.daxsmbd.test
ksmb() { # SHARE [smbclient args...]
    local share=$1
    shift
    timeout -k 5 120 smbclient --configfile="$TESTDIR/client.conf" "//$HOST/$share" \
        -I 127.0.0.1 -p "$PORT" --use-kerberos=required --use-krb5-ccache="$KRB5CCNAME" "$@"
}
kin() { # PRINCIPAL PASSWORD [kinit args...]
    local p=$1 pw=$2
    shift 2
    kdestroy >/dev/null 2>&1 || true
    printf '%s\n' "$pw" | kinit "$@" "$p" >/dev/null
}
sum() { sha256sum "$1" | cut -d' ' -f1; }
# Shows the server's last logon-failure line (the reason the checks below look for).
show_reason() { grep "logon failure" "$LOG" | tail -n 1 | sed 's/^.*: logon failure/       server: logon failure/' | cut -c1-230 || true; }
WORK=$TESTDIR/client
mkdir -p "$WORK"
head -c 4M /dev/urandom >"$WORK/file.bin"

echo "== Kerberos logons"
kin alice alice-krb-pw || die "kinit alice failed"
expect_ok "alice: ls over Kerberos" ksmb data -c 'ls'
check "server log: alice's session via Kerberos" grep -q "user alice via Kerberos" "$LOG"
expect_ok "alice: put 4 MiB" ksmb data -c "put $WORK/file.bin krb.bin"
check "server copy has the same sha256" test "$(sum "$WORK/file.bin")" = "$(sum "$DATA_DIR/krb.bin" 2>/dev/null || true)"
expect_ok "alice: get 4 MiB" ksmb data -c "get krb.bin $WORK/file.back"
check "downloaded copy has the same sha256" test "$(sum "$WORK/file.bin")" = "$(sum "$WORK/file.back" 2>/dev/null || true)"
expect_ok "alice: signed SMB 3.1.1 session (key from GSS)" \
    ksmb data --client-protection=sign --option='client min protocol=SMB3_11' -c 'ls'
expect_ok "alice: signed SMB 2.1 session (key from GSS)" \
    ksmb data --client-protection=sign --option='client max protocol=SMB2_10' -c 'ls'
expect_match "share listing over Kerberos" '^Disk\|data\|' timeout 60 smbclient \
    --configfile="$TESTDIR/client.conf" -L "//$HOST" -I 127.0.0.1 -p "$PORT" \
    --use-kerberos=required --use-krb5-ccache="$KRB5CCNAME" -g
expect_match "klist shows the service ticket" "$SVC@$REALM" klist

kin bob bob-krb-pw || die "kinit bob failed"
expect_ok "bob (user without NT hash): Kerberos works" ksmb data -c 'ls'
expect_fail "bob: NTLM is refused (no NT hash)" 'NT_STATUS_LOGON_FAILURE' \
    smb data -U 'bob%bob-krb-pw' -c 'ls'

kin extern/admin ext-pw || die "kinit extern/admin failed"
expect_ok "extern/admin via the user map" ksmb data -c 'ls'
check "server log: extern/admin logged on as carol" grep -q "user carol via Kerberos" "$LOG"

kadm "addprinc -pw dave-pw dave" || die "cannot add dave"
kin dave dave-pw || die "kinit dave failed"
expect_fail "dave (no local user) is refused" 'NT_STATUS_LOGON_FAILURE' ksmb data -c 'ls'
check "server log: dave's reason" grep -q "dave@$REALM: local user 'dave' is not in the user database" "$LOG"
show_reason

echo "== refused tickets"
kin alice alice-krb-pw || die "kinit alice failed"
set_global "kerberos keytab file" "$KRB/stale.keytab"
restart_server || die "restart with the stale keytab"
expect_fail "stale keytab (old key version) is refused" 'NT_STATUS_LOGON_FAILURE' ksmb data -c 'ls'
check "server log: key version reason" grep -Eiq "logon failure.*Kerberos:.*(kvno|key version)" "$LOG"
show_reason

set_global "kerberos keytab file" "$KRB/server.keytab"
restart_server || die "restart with the right keytab"
expect_fail "ticket for another service is refused" 'NT_STATUS_LOGON_FAILURE' \
    timeout -k 5 120 smbclient --configfile="$TESTDIR/client.conf" //other.daxsmbd.test/data \
    -I 127.0.0.1 -p "$PORT" --use-kerberos=required --use-krb5-ccache="$KRB5CCNAME" -c 'ls'
check "server log: no key for cifs/other.daxsmbd.test" \
    grep -Eq "logon failure.*Kerberos:.*cifs/other\.daxsmbd\.test" "$LOG"
show_reason
# An expired ticket: a 5-second ticket, used after it expired (plus the 2 s clockskew). The
# client would not send an expired ticket, so its ccache is told that the KDC's clock is 60 s
# behind (the ccache's time offset, which kinit records for a KDC with another clock): the
# client believes the ticket valid, the server's clock says it expired.
kin alice alice-krb-pw -l 5s || die "kinit -l 5s failed"
kvno "$SVC@$REALM" >/dev/null 2>&1 || die "kvno $SVC failed"
sleep 8
/usr/bin/python3 - "$KRB/ccache" <<'PY' || die "cannot set the ccache time offset"
import struct, sys
path = sys.argv[1]
data = open(path, "rb").read()
# FILE ccache v4 (0x0504): u16 header length, then tags; tag 1 = KDC time offset
# (i32 seconds, i32 microseconds), all big-endian.
assert data[:2] == b"\x05\x04", "not a v4 ccache"
hlen = struct.unpack(">H", data[2:4])[0]
tag = struct.pack(">HHii", 1, 8, -60, 0)
open(path, "wb").write(b"\x05\x04" + struct.pack(">H", len(tag)) + tag + data[4 + hlen:])
PY
expect_fail "expired ticket is refused" 'NT_STATUS_LOGON_FAILURE' ksmb data -c 'ls'
check "server log: ticket expired" grep -Eiq "logon failure.*Kerberos:.*expired" "$LOG"
show_reason

echo "== server auth methods"
kin alice alice-krb-pw || die "kinit alice failed"
set_global "server auth methods" "ntlm"
restart_server || die "restart with ntlm only"
expect_fail "ntlm only: Kerberos is not offered" 'NT_STATUS_|failed|Failed' ksmb data -c 'ls'
expect_ok "ntlm only: NTLM works" smb data -c 'ls'
set_global "server auth methods" "kerberos"
restart_server || die "restart with kerberos only"
expect_ok "kerberos only: Kerberos works" ksmb data -c 'ls'
expect_fail "kerberos only: NTLM is refused" 'NT_STATUS_LOGON_FAILURE' smb data -c 'ls'
check "server is alive" server_alive

finish
