#!/usr/bin/env bash
# libvirt-python (the agent's [libvirt] extra, and requirements-dev.txt) is compiled against
# the host's libvirt when pip installs it: it needs pkg-config, libvirt's headers, a C
# compiler and Python's headers. On Debian/Ubuntu as root this installs what is missing
# (apt-get, unless AUTO_INSTALL=0); elsewhere it says what to install.
#
#   bash agent/ensure-build-deps.sh [PYTHON]
set -euo pipefail

PYTHON=${1:-python3}
PACKAGES=(libvirt-dev pkg-config gcc)

python_headers() {
  "$PYTHON" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
}
ready() {
  pkg-config --exists libvirt 2>/dev/null && command -v gcc >/dev/null 2>&1 && python_headers
}

ready && exit 0

if [ "${AUTO_INSTALL:-1}" = 1 ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  python_headers || PACKAGES+=(python3-dev)
  echo "installing ${PACKAGES[*]} (libvirt-python is built against them)..."
  log=$(mktemp)
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "${PACKAGES[@]}"; } </dev/null >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "apt-get install ${PACKAGES[*]} failed" >&2
    exit 1
  fi
  rm -f "$log"
  ready && exit 0
fi

echo "libvirt-python needs libvirt's headers, pkg-config, a C compiler and Python's headers:" \
  "install them (Debian/Ubuntu: apt-get install libvirt-dev pkg-config gcc python3-dev;" \
  "macOS: brew install libvirt pkg-config) and retry." >&2
exit 1
