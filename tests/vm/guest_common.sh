# shellcheck shell=bash
# Guest-side helpers (sourced by the guest_*.sh scripts, which run as root inside the VM with the
# staging directory at /host): checks, a daxsmbd on a loopback port, the emulated NVDIMM.
H=${VMRUN_HOST:-/host}
DAXSMBD=$H/bin/daxsmbd
ADMIN=$H/bin/daxsmbd-admin
PORT=10445
USER_NAME=demo
USER_PASS=demo
PASSES=0
FAILS=0
SPID=
SLOG=

ok() { PASSES=$((PASSES + 1)); echo "ok     $*"; }
bad() { FAILS=$((FAILS + 1)); echo "FAIL   $*"; }
# check WHAT CMD...: CMD must succeed.
check() {
    local what=$1
    shift
    if "$@" >/tmp/check.out 2>&1; then ok "$what"; else
        bad "$what"
        sed 's/^/    | /' /tmp/check.out | tail -15
    fi
}
same_sha() { [ "$(sha256sum <"$1" | cut -d' ' -f1)" = "$(sha256sum <"$2" | cut -d' ' -f1)" ]; }
finish() {
    echo "== $PASSES passed, $FAILS failed"
    [ "$FAILS" = 0 ]
}

# pmem_mount FS DIR: a fresh FS on /dev/pmem0 mounted with -o dax at DIR.
pmem_mount() {
    local fs=$1 dir=$2
    umount "$dir" 2>/dev/null || true
    mkdir -p "$dir"
    case $fs in
        ext4) mkfs.ext4 -q -F -b 4096 /dev/pmem0 ;; # DAX needs page-sized blocks (small devices get 1 KiB)
        xfs) mkfs.xfs -q -f -m reflink=0 /dev/pmem0 ;;
    esac
    mount -o dax /dev/pmem0 "$dir"
}

# add_smb_user CONF: $USER_NAME in the user database of CONF, acting as a Unix account of the
# same name (made here: the guest image has none; the server acts as it on disk).
add_smb_user() {
    id "$USER_NAME" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
    echo "$USER_PASS" | "$ADMIN" -s "$1" user add "$USER_NAME"
}

# server_start NAME CONF-TEXT: daxsmbd in the foreground on $PORT, log in $H/daxsmbd-NAME.log.
server_start() {
    local name=$1
    printf '%s\n' "$2" >/tmp/daxsmbd.conf
    [ -f /tmp/users.db ] || add_smb_user /tmp/daxsmbd.conf
    SLOG=$H/daxsmbd-$name.log
    "$DAXSMBD" -s /tmp/daxsmbd.conf -F >"$SLOG" 2>&1 &
    SPID=$!
    for _ in $(seq 100); do
        ss -ltnH "sport = :$PORT" | grep -q . && return 0
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.2
    done
    echo "daxsmbd did not start:"
    tail -5 "$SLOG"
    return 1
}
server_stop() {
    [ -n "$SPID" ] || return 0
    kill -TERM "$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
    SPID=
}
# dax_stat KEY: the last value of KEY in the server's "dax: ..." stats line (SIGUSR1).
dax_stat() {
    local before
    before=$(grep -c 'dax: reads=' "$SLOG" || true)
    kill -USR1 "$SPID"
    for _ in $(seq 50); do
        [ "$(grep -c 'dax: reads=' "$SLOG" || true)" -gt "$before" ] && break
        sleep 0.1
    done
    grep -o "dax: .*" "$SLOG" | tail -1 | tr ' ' '\n' | sed -n "s/^$1=//p"
}
smb() { # SHARE CMDS
    smbclient "//127.0.0.1/$1" -p "$PORT" -U "$USER_NAME%$USER_PASS" -m SMB3 -c "$2"
}
cifs_mount() { # SHARE DIR [extra options]
    mkdir -p "$2"
    mount -t cifs "//127.0.0.1/$1" "$2" \
        -o "vers=3.1.1,username=$USER_NAME,password=$USER_PASS,port=$PORT,cache=none${3:+,$3}"
}
