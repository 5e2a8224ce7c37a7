#!/usr/bin/env bash
# Installs what Nimbus needs on Debian 12 when it is missing: libpq (headers and library),
# the PostgreSQL server programs (for the embedded database and the tests), libcurl built with
# OpenSSL and nghttp2 (HTTP/2 to APNs) and OpenSSL's libcrypto (provider-token signatures), both
# with headers, pkg-config and curl.
# Uses apt-get, through sudo when not root. Starts nothing as a service and creates no cluster.
set -euo pipefail

packages=(libpq-dev postgresql libcurl4-openssl-dev libssl-dev pkg-config curl ca-certificates)
[ "$#" -gt 0 ] && packages+=("$@")

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-deps: missing packages (${missing[*]}) and no sudo to install them; ask an administrator to run: apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
# Debian's postgresql package would create and start a 'main' cluster; Nimbus runs its own.
"${sudo[@]}" mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" | "${sudo[@]}" tee /etc/postgresql-common/createcluster.d/nimbus.conf >/dev/null
# Nothing installed here may start as a service (containers and CI have no init system anyway).
policy_created=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
  "${sudo[@]}" chmod 755 /usr/sbin/policy-rc.d
  policy_created=1
fi
cleanup() { [ "$policy_created" -eq 1 ] && "${sudo[@]}" rm -f /usr/sbin/policy-rc.d; true; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
# A log of this run's own: a fixed /tmp name left by another user (root, or a normal user) could
# not be written, and would fail the install.
log=$(mktemp "${TMPDIR:-/tmp}/nimbus-apt.XXXXXX")
if ! "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  "${sudo[@]}" apt-get update -q >>"$log" 2>&1
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >>"$log" 2>&1 || {
    tail -20 "$log" >&2; echo "install-deps: apt-get failed; its log: $log" >&2; exit 1; }
fi
rm -f "$log"
echo "install-deps: done" >&2
