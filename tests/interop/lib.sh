# shellcheck shell=bash disable=SC2034  # variables here are read by the scripts sourcing it
# Helpers for the interop tests: a private daxsmbd on a free loopback port with its own
# configuration, user database and share directories in a temp dir, stopped by its PID on exit.
#
#   . "$(dirname "$0")/lib.sh"
#   interop_setup            # temp dir, config, user alice/pw, server started, EXIT trap set
#   expect_ok   "what" CMD...          # CMD exits 0 and prints no NT_STATUS_ error
#   expect_fail "what" REGEX CMD...    # CMD's output matches REGEX (or, REGEX empty: CMD fails)
#   expect_match "what" REGEX CMD...   # CMD exits 0 and its output matches REGEX
#   check "what" CMD...                # a local condition (test, cmp, lacks, file_lacks) holds
#   smb SHARE [smbclient args...]      # smbclient //127.0.0.1/SHARE as alice on our port
#   finish                   # prints "NAME: N passed, M failed" and exits 1 on any failure
# The checks return 0 even when they fail (so `set -e` scripts go on to the next check); they set
# LAST_OK=1/0 and OUT (the command's output) for a caller that wants to branch or look further.
#
# Environment:
#   DAXSMBD_BUILD   build directory with daxsmbd and daxsmbd-admin (default: <repo>/build)
#   INTEROP_SERVER  daxsmbd (default) | samba: run the same tests against a private Samba smbd
#                   with the same shares, to check a test script itself
#   KEEP=1          keep the temp dir; LOG_LEVEL: daxsmbd's "log level" (default 1)
#   SHARE_OPTIONS   extra daxsmbd share keys for the writable shares [data] and [hidden], ';'
#                   separated, e.g. SHARE_OPTIONS='direct io = yes; io sqpoll = yes' (the
#                   block path variants, README "Block path")
# Variables set by interop_setup: PORT TESTDIR CONF LOG DATA_DIR RO_DIR SERVER_PID.

INTEROP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DAXSMBD_BUILD=${DAXSMBD_BUILD:-$INTEROP_ROOT/build}
DAXSMBD=$DAXSMBD_BUILD/daxsmbd
DAXSMBD_ADMIN=$DAXSMBD_BUILD/daxsmbd-admin
INTEROP_SERVER=${INTEROP_SERVER:-daxsmbd}
TEST_NAME=${TEST_NAME:-$(basename "$0" .sh)}
SMB_USER=alice
SMB_PASS=pw
PASSES=0
FAILS=0
SERVER_PID=
TESTDIR=
LOG=
PORT=

log() { printf '[%s] %s\n' "$TEST_NAME" "$*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

# A TCP port on 127.0.0.1 that nothing listens on now (the kernel picks it; it is released
# before the server binds it, which is racy only against other tests picking ports the same way).
free_port() {
    local p
    for _ in 1 2 3 4 5; do
        p=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        # Stay clear of 445 and of the Samba peer's default port.
        [ "$p" != 445 ] && [ "$p" != 4450 ] && { echo "$p"; return 0; }
    done
    return 1
}

port_listening() { ss -ltnH "sport = :$1" 2>/dev/null | grep -q .; }

# ---------------------------------------------------------------- checks
# last command's output, for further checks by the caller
OUT=

_run_capture() {
    local rc=0
    OUT=$("$@" 2>&1) || rc=$?
    return "$rc"
}

LAST_OK=0

_pass() {
    LAST_OK=1
    PASSES=$((PASSES + 1))
    printf 'ok     %s\n' "$1"
}

_fail() {
    LAST_OK=0
    FAILS=$((FAILS + 1))
    printf 'FAIL   %s\n' "$1"
    if [ -n "${2:-}" ]; then printf '%s\n' "$2" | tail -n 15 | sed 's/^/       | /'; fi
}

# expect_ok WHAT CMD...: CMD exits 0 and its output has no NT_STATUS_ error (smbclient reports
# a failed command that way, sometimes with exit code 0).
expect_ok() {
    local what=$1 rc=0
    shift
    _run_capture "$@" || rc=$?
    if [ "$rc" -eq 0 ] && ! grep -q 'NT_STATUS_' <<<"$OUT"; then
        _pass "$what"
        return 0
    fi
    _fail "$what (exit $rc)" "$OUT"
    return 0
}

# expect_fail WHAT REGEX CMD...: CMD's output matches the extended REGEX; with an empty REGEX,
# CMD must exit non-zero.
expect_fail() {
    local what=$1 re=$2 rc=0
    shift 2
    _run_capture "$@" || rc=$?
    if [ -n "$re" ]; then
        if grep -Eq -- "$re" <<<"$OUT"; then
            _pass "$what"
            return 0
        fi
        _fail "$what (wanted /$re/, exit $rc)" "$OUT"
        return 0
    fi
    if [ "$rc" -ne 0 ]; then
        _pass "$what"
        return 0
    fi
    _fail "$what (exit 0, a failure was expected)" "$OUT"
    return 0
}

# expect_match WHAT REGEX CMD...: CMD exits 0 and its output matches the extended REGEX (for
# debug output, where NT_STATUS_ strings appear in normal operation).
expect_match() {
    local what=$1 re=$2 rc=0
    shift 2
    _run_capture "$@" || rc=$?
    if [ "$rc" -eq 0 ] && grep -Eq -- "$re" <<<"$OUT"; then
        _pass "$what"
        return 0
    fi
    _fail "$what (wanted exit 0 and /$re/, exit $rc)" "$OUT"
    return 0
}

# check WHAT CMD...: a plain local condition (test, cmp, grep...).
check() {
    local what=$1
    shift
    if "$@" >/dev/null 2>&1; then
        _pass "$what"
        return 0
    fi
    _fail "$what"
    return 0
}

# For `check`: a text or a file without a match of an extended regular expression.
lacks() { ! grep -Eq -- "$1" <<<"$2"; }           # lacks REGEX TEXT
file_lacks() { ! grep -Eq -- "$1" "$2" 2>/dev/null; } # file_lacks REGEX FILE (missing file: true)

finish() {
    if [ -n "$SERVER_PID" ] && ! server_alive; then _fail "server still running at the end"; fi
    printf '%s: %d passed, %d failed\n' "$TEST_NAME" "$PASSES" "$FAILS"
    [ "$FAILS" -eq 0 ] || exit 1
    exit 0
}

# ---------------------------------------------------------------- smbclient
# A client configuration of our own, so that /etc/samba/smb.conf cannot change the tests.
smb() {
    local share=$1
    shift
    timeout -k 5 300 smbclient --configfile="$TESTDIR/client.conf" "//127.0.0.1/$share" \
        -p "$PORT" -U "$SMB_USER%$SMB_PASS" "$@"
}

# smbcacls 4.17 has no port option and ignores "smb ports": cacls runs it under the LD_PRELOAD
# shim port_redirect.c, which sends its connect() to 127.0.0.1:445 to the server's port.
# --numeric keeps smbcacls from resolving SIDs through LSA (daxsmbd serves srvsvc only).
# cacls_setup (once, after interop_setup) builds the shim.
CACLS_SHIM=
cacls_setup() {
    command -v smbcacls >/dev/null || die "smbcacls is not installed (package smbclient)"
    CACLS_SHIM=$TESTDIR/port_redirect.so
    gcc-12 -shared -fPIC -O2 -o "$CACLS_SHIM" "$INTEROP_ROOT/tests/interop/port_redirect.c" -ldl ||
        die "cannot build the port redirect shim"
}
cacls() { # FILE [smbcacls args...]: as alice, on share data
    local f=$1
    shift
    DAXSMBD_SMB_PORT=$PORT LD_PRELOAD=$CACLS_SHIM timeout 60 smbcacls \
        --configfile="$TESTDIR/client.conf" -U "$SMB_USER%$SMB_PASS" --numeric \
        //127.0.0.1/data "$f" "$@"
}

# ---------------------------------------------------------------- server
server_alive() { [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; }

# SHARE_OPTIONS as configuration lines (one key per line, indented).
share_option_lines() {
    local IFS=';' opt
    for opt in ${SHARE_OPTIONS:-}; do
        opt=$(sed 's/^ *//; s/ *$//' <<<"$opt")
        [ -n "$opt" ] && printf '    %s\n' "$opt"
    done
    return 0
}

write_daxsmbd_conf() {
    local extra
    extra=$(share_option_lines)
    cat >"$CONF" <<EOF
# written by tests/interop/lib.sh
[global]
    smb ports = $PORT
    interfaces = 127.0.0.1
    user database = $TESTDIR/users.db
    server signing = auto
    log level = ${LOG_LEVEL:-1}
    control socket = $TESTDIR/run/control
${DAXSMBD_EXTRA_GLOBAL:-}

[data]
    path = $DATA_DIR
    read only = no
    comment = interop test share
$extra

[ro]
    path = $RO_DIR
    read only = yes

[hidden]
    path = $DATA_DIR
    read only = no
    browseable = no
$extra
EOF
}

write_samba_conf() {
    local s=$TESTDIR/samba
    mkdir -p "$s"/{private,lock,state,cache,pid,ncalrpc}
    cat >"$CONF" <<EOF
[global]
    server role = standalone server
    interfaces = 127.0.0.1
    bind interfaces only = yes
    smb ports = $PORT
    disable netbios = yes
    server min protocol = SMB2_02
    private dir = $s/private
    lock directory = $s/lock
    state directory = $s/state
    cache directory = $s/cache
    pid directory = $s/pid
    ncalrpc dir = $s/ncalrpc
    log file = $s/log.%m
    log level = ${LOG_LEVEL:-1}
    passdb backend = tdbsam:$s/private/passdb.tdb
    load printers = no
    printing = bsd
    printcap name = /dev/null
    disable spoolss = yes
    map to guest = never
[data]
    path = $DATA_DIR
    read only = no
    comment = interop test share
[ro]
    path = $RO_DIR
    read only = yes
[hidden]
    path = $DATA_DIR
    read only = no
    browseable = no
EOF
}

# Unix accounts the test made (removed on exit): every SMB user acts as one of its own on disk,
# made here so that nothing on the machine is assumed to exist. Names: dxt_<pid>_<name>.
# make_unix_account sets ACCOUNT rather than printing the name: in a $(...) subshell its record
# in UNIX_ACCOUNTS would be lost and the account never removed.
UNIX_ACCOUNTS=()
ACCOUNT=
make_unix_account() { # NAME [useradd args...]: creates dxt_<pid>_NAME; its name in ACCOUNT
    ACCOUNT="dxt_$$_$1"
    shift
    id "$ACCOUNT" >/dev/null 2>&1 ||
        useradd --no-create-home --shell /usr/sbin/nologin "$@" "$ACCOUNT" || return 1
    UNIX_ACCOUNTS+=("$ACCOUNT")
}
unix_account_of() { echo "dxt_$$_$1"; } # the account SMB user NAME acts as
remove_unix_accounts() {
    local a
    for a in "${UNIX_ACCOUNTS[@]}"; do
        userdel "$a" >/dev/null 2>&1 || true
        if getent group "$a" >/dev/null; then groupdel "$a" >/dev/null 2>&1 || true; fi
    done
    UNIX_ACCOUNTS=()
}
# chown_to NAME PATH...: PATHs (recursively) owned by SMB user NAME's account and its group.
chown_to() {
    local acct
    acct=$(unix_account_of "$1")
    shift
    chown -R "$acct:$acct" "$@"
}

add_user() { # NAME PASSWORD [daxsmbd-admin args...]: the SMB user with a Unix account of its own
    local name=$1 pass=$2 acct
    shift 2
    make_unix_account "$name" || return 1
    acct=$ACCOUNT
    if [ "$INTEROP_SERVER" = samba ]; then
        # Samba's users are Unix accounts: the same name as ours, for the same tests.
        id "$name" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin \
            -o -u "$(id -u "$acct")" -g "$(id -g "$acct")" "$name" || return 1
        UNIX_ACCOUNTS+=("$name")
        printf '%s\n%s\n' "$pass" "$pass" | smbpasswd -c "$CONF" -a -s "$name" >/dev/null
    else
        printf '%s\n' "$pass" | "$DAXSMBD_ADMIN" -s "$CONF" user add "$name" \
            --uid "$(id -u "$acct")" --gid "$(id -g "$acct")" "$@"
    fi
}

start_server() {
    : >"$LOG"
    if [ "$INTEROP_SERVER" = samba ]; then
        # Its own session: on shutdown smbd signals its whole process group, which would
        # otherwise be ours. (setsid execs without forking here: a background job of a script
        # is no group leader, so $! is smbd's PID.)
        setsid smbd -s "$CONF" --foreground --no-process-group --debug-stdout </dev/null >>"$LOG" 2>&1 &
    else
        "$DAXSMBD" -s "$CONF" -F </dev/null >>"$LOG" 2>&1 &
    fi
    SERVER_PID=$!
    local deadline=$((SECONDS + 20))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if port_listening "$PORT"; then
            log "$INTEROP_SERVER started, pid $SERVER_PID, 127.0.0.1:$PORT"
            return 0
        fi
        if ! server_alive; then
            local rc=0
            wait "$SERVER_PID" || rc=$?
            SERVER_PID=
            log "server exited with status $rc before listening on $PORT; its log:"
            sed 's/^/  | /' "$LOG" >&2
            return 1
        fi
        sleep 0.1
    done
    log "server did not listen on $PORT within 20 s; its log:"
    sed 's/^/  | /' "$LOG" >&2
    return 1
}

# Stops the server we started (by PID only). Returns 1 if it had died on its own before.
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    local pid=$SERVER_PID rc=0 kids=
    SERVER_PID=
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" 2>/dev/null || rc=$?
        log "server pid $pid had exited by itself (status $rc)"
        return 1
    fi
    # Samba forks one smbd per connection: remember our smbd's children (by parent PID only).
    [ "$INTEROP_SERVER" = samba ] && kids=$(pgrep -P "$pid" 2>/dev/null || true)
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "server pid $pid ignored SIGTERM for 10 s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    for c in $kids; do
        if [ "$(cat "/proc/$c/comm" 2>/dev/null)" = smbd ]; then kill -KILL "$c" 2>/dev/null || true; fi
    done
    return 0
}

restart_server() {
    stop_server || true
    start_server
}

_interop_cleanup() {
    local rc=$?
    local died=0
    stop_server || died=1
    if [ "$rc" -ne 0 ] || [ "$FAILS" -ne 0 ] || [ "$died" -ne 0 ]; then
        if [ -n "$LOG" ] && [ -s "$LOG" ]; then
            log "server log ($LOG), last 200 lines:"
            tail -n 200 "$LOG" | sed 's/^/  | /' >&2
        fi
        [ "$died" -eq 0 ] || log "FAIL: the server had died during the test"
    fi
    remove_unix_accounts
    if [ -n "$TESTDIR" ] && [ "${KEEP:-0}" != 1 ]; then
        rm -rf "$TESTDIR"
    elif [ -n "$TESTDIR" ]; then
        log "kept $TESTDIR"
    fi
    if [ "$died" -ne 0 ] && [ "$rc" -eq 0 ]; then exit 1; fi
    exit "$rc"
}

# interop_setup: everything a test needs; the EXIT trap stops the server and cleans up.
interop_setup() {
    command -v smbclient >/dev/null || die "smbclient is not installed (run .ci/install-deps.sh)"
    if [ "$INTEROP_SERVER" = daxsmbd ]; then
        [ -x "$DAXSMBD" ] || die "$DAXSMBD not built"
        [ -x "$DAXSMBD_ADMIN" ] || die "$DAXSMBD_ADMIN not built"
    fi
    TESTDIR=$(mktemp -d /tmp/daxsmbd-interop.XXXXXX)
    trap _interop_cleanup EXIT
    # The server creates files as alice's uid: every directory it walks must be reachable.
    chmod 755 "$TESTDIR"
    DATA_DIR=$TESTDIR/data
    RO_DIR=$TESTDIR/ro
    mkdir -p "$DATA_DIR" "$RO_DIR"
    echo "read-only share content" >"$RO_DIR/readme.txt"
    CONF=$TESTDIR/server.conf
    LOG=$TESTDIR/server.log
    printf '[global]\n    client min protocol = SMB2_02\n' >"$TESTDIR/client.conf"
    PORT=$(free_port) || die "no free port"
    if [ "$INTEROP_SERVER" = samba ]; then write_samba_conf; else write_daxsmbd_conf; fi
    add_user "$SMB_USER" "$SMB_PASS" || die "cannot add user $SMB_USER"
    # The writable share belongs to its user, as a real one would (files the server creates
    # are the user's; files a test puts there itself it gives to the user with chown_to).
    chown_to "$SMB_USER" "$DATA_DIR"
    chmod 0755 "$DATA_DIR"
    start_server || die "cannot start $INTEROP_SERVER"
}
