#!/bin/bash
# Installs every Debian 12 package daxsmbd needs to build and to run its tests. Run as root.
# Idempotent: packages already present are left alone, and `apt-get update` runs (once) only when
# something is missing.
#
#   .ci/install-deps.sh           everything: build, unit/interop tests, VM tests, cluster tests
#   .ci/install-deps.sh --build   only what building daxsmbd needs
#   .ci/install-deps.sh --list    print the package list and exit
#
# Services that packages would start on installation (smbd on port 445, nmbd, the Kerberos KDC,
# etcd) are not started: the tests start private instances on loopback ports themselves.
set -euo pipefail

BUILD_PKGS=(
    build-essential cmake ninja-build pkg-config g++-12 ccache
    clang-14 lld-14 libclang-rt-14-dev clang-format-14 # clang build, libFuzzer, sanitizers
    libssl-dev libkrb5-dev libboost1.81-dev liburing-dev
    libibverbs-dev librdmacm-dev libpmem2-dev
    libgtest-dev libgmock-dev libbenchmark-dev
)
TEST_PKGS=(
    # Kerberos test realm: krb5kdc and kdb5_util (krb5-kdc), kadmin.local to add principals
    # (krb5-admin-server), kinit/klist (krb5-user)
    krb5-kdc krb5-admin-server krb5-user
    # the reference peer, smbtorture, smbclient, libsmbclient for the load client
    samba samba-testsuite smbclient libsmbclient-dev
    python3 python3-impacket fio iperf3 sockperf
    attr xxd procps iproute2 shellcheck
    prometheus # promtool: checks the metrics endpoint's text exposition format
    tshark     # decodes the Share Redirect error context (e2e_share_redirect)
)
VM_PKGS=(qemu-system-x86 qemu-utils debootstrap e2fsprogs) # tests/vm: the guest image and qemu
CLUSTER_PKGS=(etcd-server etcd-client)                      # cluster membership tests

case "${1:-}" in
    --build) PKGS=("${BUILD_PKGS[@]}") ;;
    "" | --all) PKGS=("${BUILD_PKGS[@]}" "${TEST_PKGS[@]}" "${VM_PKGS[@]}" "${CLUSTER_PKGS[@]}") ;;
    --list)
        printf '%s\n' "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}" "${VM_PKGS[@]}" "${CLUSTER_PKGS[@]}"
        exit 0
        ;;
    *)
        echo "usage: $0 [--build|--all|--list]" >&2
        exit 2
        ;;
esac

# missing PKG...: prints those of PKG... that are not installed (one dpkg-query for all).
missing_of() {
    local have
    have=$(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null |
        awk '/ install ok installed$/ {sub(/:.*/, "", $1); print $1}' || true)
    for p in "$@"; do grep -qxF "$p" <<<"$have" || echo "$p"; done
}

mapfile -t missing < <(missing_of "${PKGS[@]}")
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#PKGS[@]} packages are installed"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run this script as root to install them" >&2
    exit 1
fi

echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Keep package scripts from starting services (invoke-rc.d and deb-systemd-invoke honour
# policy-rc.d): a system smbd would take port 445 from daxsmbd. Only when no policy is in place.
POLICY=/usr/sbin/policy-rc.d
if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\n# written by daxsmbd .ci/install-deps.sh while it installs packages\nexit 101\n' >"$POLICY"
    chmod 755 "$POLICY"
    trap 'rm -f "$POLICY"' EXIT
fi

apt_install() { apt-get install -y -q -o Dpkg::Use-Pty=0 "$@"; }
# The package lists may be missing (fresh image) or stale: update once, then install.
apt-get update -q
apt_install "${missing[@]}"

mapfile -t still < <(missing_of "${missing[@]}")
if [ ${#still[@]} -ne 0 ]; then
    echo "install-deps: still missing after installation: ${still[*]}" >&2
    exit 1
fi
echo "install-deps: installed: ${missing[*]}"
# Only meaningful where systemd runs (not in a container): services enabled for the next boot.
[ -d /run/systemd/system ] || exit 0
for svc in smbd nmbd krb5-kdc krb5-admin-server etcd; do
    if [ "$(systemctl is-enabled "$svc" 2>/dev/null)" = enabled ]; then
        echo "install-deps: note: the system service $svc is enabled for the next boot;" \
            "'systemctl disable $svc' keeps it from taking ports daxsmbd or the tests use"
    fi
done
