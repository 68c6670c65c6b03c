#!/bin/bash
# A private Samba smbd to measure and compare daxsmbd against (tests/bench, the smbtorture
# baseline): standalone, every file of its own (configuration, passdb, state, logs) under
# $PEER_DIR/samba, never /etc/samba; it listens on 127.0.0.1:$SMB_PORT only, with user alice
# (password pw) and the shares [data] and [enc] (the same directory, encryption required) on
# $PEER_DIR/share.
#
#   tests/peer/samba-peer.sh setup     write smb.conf, make the Unix account, add the SMB user
#   tests/peer/samba-peer.sh start     start smbd (setup first when needed), wait for its port
#   tests/peer/samba-peer.sh stop      stop the smbd started here, by its recorded PID
#   tests/peer/samba-peer.sh restart | status | conf (prints the smb.conf path)
#
# Environment: PEER_DIR (default ~/.cache/daxsmbd-peer), SMB_PORT (4450; never 445, the system
# port a real smbd or daxsmbd may own), SMB_USER/SMB_PASS (alice/pw), SAMBA_LOGLEVEL (1),
# SAMBA_EXTRA_GLOBAL (more [global] lines, e.g. "server signing = mandatory"; applied by setup).
# Nothing is ever stopped by name: only the PID recorded at start, and that smbd's children.
set -euo pipefail

PEER_DIR=${PEER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/daxsmbd-peer}
SMB_PORT=${SMB_PORT:-4450}
SMB_USER=${SMB_USER:-alice}
SMB_PASS=${SMB_PASS:-pw}
SDIR=$PEER_DIR/samba
CONF=$SDIR/smb.conf
SHARE=$PEER_DIR/share
PIDFILE=$SDIR/smbd.launch.pid

die() {
    echo "samba-peer: $*" >&2
    exit 1
}
[ "$SMB_PORT" != 445 ] || die "SMB_PORT 445 is the system's SMB port: pick a private one"

write_conf() {
    mkdir -p "$SDIR"/{private,lock,state,cache,pid,log,ncalrpc} "$SHARE"
    chmod 1777 "$SHARE"
    # The share options are those of a Samba set up for Windows clients: ACLs and streams in
    # xattrs, DOS attributes stored, leases and durable handles on; kernel oplocks, share modes
    # and POSIX locking off, as this Samba is the only user of the directory.
    cat >"$CONF" <<EOF
# written by tests/peer/samba-peer.sh
[global]
    server role = standalone server
    workgroup = WORKGROUP
    netbios name = PEERSMB
    interfaces = 127.0.0.1
    bind interfaces only = yes
    smb ports = $SMB_PORT
    disable netbios = yes
    server min protocol = SMB2_10
    server max protocol = SMB3
    private dir = $SDIR/private
    lock directory = $SDIR/lock
    state directory = $SDIR/state
    cache directory = $SDIR/cache
    pid directory = $SDIR/pid
    ncalrpc dir = $SDIR/ncalrpc
    log file = $SDIR/log/log.%m
    max log size = 10000
    log level = ${SAMBA_LOGLEVEL:-1}
    passdb backend = tdbsam:$SDIR/private/passdb.tdb
    load printers = no
    printing = bsd
    printcap name = /dev/null
    disable spoolss = yes
    map to guest = never
    server signing = auto
    server smb encrypt = if_required
    dns proxy = no
    server multi channel support = yes
    smb2 leases = yes
${SAMBA_EXTRA_GLOBAL:+    $SAMBA_EXTRA_GLOBAL}

[data]
    path = $SHARE
    read only = no
    valid users = $SMB_USER
    create mask = 0644
    directory mask = 0755
    vfs objects = acl_xattr streams_xattr
    ea support = yes
    store dos attributes = yes
    kernel oplocks = no
    kernel share modes = no
    posix locking = no
    oplocks = yes
    durable handles = yes

[enc]
    path = $SHARE
    read only = no
    valid users = $SMB_USER
    smb encrypt = required
    vfs objects = acl_xattr streams_xattr
    kernel oplocks = no
    kernel share modes = no
    posix locking = no
EOF
}

setup() {
    if ! command -v smbd >/dev/null || ! command -v smbpasswd >/dev/null; then
        die "Samba is not installed (.ci/install-deps.sh installs samba)"
    fi
    write_conf
    # Samba's users are Unix accounts.
    id "$SMB_USER" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$SMB_USER"
    printf '%s\n%s\n' "$SMB_PASS" "$SMB_PASS" | smbpasswd -c "$CONF" -a -s "$SMB_USER" >/dev/null
}

running() { [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
listening() { ss -ltnH "sport = :$SMB_PORT" | grep -q .; }

start() {
    [ -f "$CONF" ] || setup
    if running; then
        echo "samba-peer: smbd already runs, pid $(cat "$PIDFILE")" >&2
        return 0
    fi
    if listening; then die "port $SMB_PORT is taken, and not by our smbd"; fi
    # A session of its own: on shutdown smbd signals its whole process group, which would
    # otherwise be the caller's. setsid execs without forking (a background job is no group
    # leader), so $! is smbd's PID, which forks one child per connection.
    setsid smbd -s "$CONF" --foreground --no-process-group </dev/null >"$SDIR/log/smbd.stdout" 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 100); do
        if listening; then
            echo "samba-peer: smbd $(smbd -V | awk '{print $2}') pid $(cat "$PIDFILE") on 127.0.0.1:$SMB_PORT" >&2
            return 0
        fi
        if ! running; then
            cat "$SDIR/log/smbd.stdout" >&2
            die "smbd exited (logs in $SDIR/log)"
        fi
        sleep 0.1
    done
    die "smbd does not listen on $SMB_PORT after 10 s (logs in $SDIR/log)"
}

stop() {
    if ! running; then
        rm -f "$PIDFILE"
        return 0
    fi
    local pid kids c
    pid=$(cat "$PIDFILE")
    # Its children (one smbd per connection, notifyd, cleanupd) by parent PID, taken before
    # the parent goes away.
    kids=$(pgrep -P "$pid" 2>/dev/null || true)
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    sleep 0.2
    for c in $kids; do
        # Only if it still is an smbd (the PID may have been reused).
        if [ "$(cat "/proc/$c/comm" 2>/dev/null)" = smbd ]; then kill -KILL "$c" 2>/dev/null || true; fi
    done
    rm -f "$PIDFILE"
}

case ${1:-} in
    setup) setup ;;
    start) start ;;
    stop) stop ;;
    restart)
        stop
        start
        ;;
    status)
        if running; then echo "running, pid $(cat "$PIDFILE"), port $SMB_PORT"; else
            echo stopped
            exit 1
        fi
        ;;
    conf) echo "$CONF" ;;
    *)
        echo "usage: $0 setup|start|stop|restart|status|conf" >&2
        exit 2
        ;;
esac
