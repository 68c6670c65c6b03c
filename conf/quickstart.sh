#!/bin/bash
# Quick start, as root on Debian 12: install the build dependencies, build daxsmbd, write a
# default configuration (share "share" = /srv/daxsmbd/share, port 445) unless one exists, add the
# user demo (password demo, acting as the Unix account daxsmbd-demo, which owns the share) unless
# it exists, and run the server in the foreground.
#
#   conf/quickstart.sh
#
# Then, from another terminal:  smbclient //127.0.0.1/share -U demo%demo -m SMB3
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

CONF_DIR=/etc/daxsmbd
CONF=$CONF_DIR/daxsmbd.conf
SHARE=/srv/daxsmbd/share
USERDB=/var/lib/daxsmbd/users.db
BUILD=$ROOT/build

say() { printf 'quickstart: %s\n' "$*"; }
die() {
    printf 'quickstart: %s\n' "$*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || die "run as root (it installs packages, writes $CONF_DIR and listens on port 445)"

say "installing build dependencies"
"$ROOT/.ci/install-deps.sh" --build

say "building in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$BUILD" daxsmbd daxsmbd-admin

mkdir -p "$SHARE" "$CONF_DIR" "$(dirname "$USERDB")"
chmod 700 "$(dirname "$USERDB")"

# The SMB user demo acts as an unprivileged Unix account of its own on disk (README
# "Identity"), which owns the share.
DEMO_ACCOUNT=daxsmbd-demo
if ! id "$DEMO_ACCOUNT" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$DEMO_ACCOUNT"
    say "made the Unix account $DEMO_ACCOUNT for the user demo"
fi
chown "$DEMO_ACCOUNT:$DEMO_ACCOUNT" "$SHARE"
chmod 0755 "$SHARE"

if [ -e "$CONF" ]; then
    say "keeping the existing $CONF"
else
    tmp=$(mktemp "$CONF.XXXXXX")
    "$BUILD/daxsmbd" --print-default-config --share-path "$SHARE" --user-database "$USERDB" >"$tmp" ||
        {
            rm -f "$tmp"
            die "daxsmbd --print-default-config failed"
        }
    chmod 644 "$tmp"
    mv "$tmp" "$CONF"
    say "wrote $CONF"
fi

if "$BUILD/daxsmbd-admin" -s "$CONF" user list | awk '$1 == "demo" {found = 1} END {exit !found}'; then
    say "user demo exists"
else
    printf 'demo\n' | "$BUILD/daxsmbd-admin" -s "$CONF" user add demo \
        --uid "$(id -u "$DEMO_ACCOUNT")" --gid "$(id -g "$DEMO_ACCOUNT")"
    say "added user demo (password demo), acting as $DEMO_ACCOUNT on disk"
fi

if ss -ltnH 'sport = :445' | grep -q .; then
    ss -ltnpH 'sport = :445' >&2 || true
    die "port 445 is already in use (a Samba smbd? 'systemctl stop smbd')"
fi

cat <<EOF

daxsmbd is starting on port 445 with $CONF (Ctrl-C stops it).
Connect from another terminal with:

    smbclient //127.0.0.1/share -U demo%demo -m SMB3

(smbclient is in Debian's package smbclient; a configuration you wrote yourself may name other
shares.)

EOF
exec "$BUILD/daxsmbd" -s "$CONF" -F
