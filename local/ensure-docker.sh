#!/usr/bin/env bash
# `sam local invoke` / `sam local start-api` need a reachable Docker daemon. On laptops that is
# Docker Desktop or systemd's docker.service; in containers/VMs without an init system (CI, dev
# sandboxes) this script starts dockerd itself, picking a storage driver and iptables mode that work.
set -euo pipefail

LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
TIMEOUT=${DOCKERD_TIMEOUT:-60}
DATA_ROOT=${DOCKERD_DATA_ROOT:-/var/lib/docker}
# shellcheck disable=SC2016  # the backticks are literal, for the reader
INSTALL_HINT='Docker is needed for sam local: install it with `apt-get install docker.io` (Debian/Ubuntu) or Docker Desktop (macOS/Windows), or rerun as root with AUTO_INSTALL=1 to let this script install docker.io.'

docker_ok() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

docker_ok && exit 0

is_root() { [ "$(id -u)" -eq 0 ]; }

# 1. Install the engine if it is missing (only when explicitly allowed).
if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  if [ "${AUTO_INSTALL:-0}" = 1 ] && is_root && command -v apt-get >/dev/null 2>&1; then
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io; } >/tmp/ensure-docker-apt.log 2>&1; then
      echo "ensure-docker: 'apt-get install docker.io' failed, see /tmp/ensure-docker-apt.log:" >&2
      tail -n 20 /tmp/ensure-docker-apt.log >&2
      exit 1
    fi
    docker_ok && exit 0   # the package's init script may already have started it
    command -v dockerd >/dev/null 2>&1 || { echo "ensure-docker: docker.io was installed but dockerd is not on PATH ($PATH)" >&2; exit 1; }
  else
    echo "$INSTALL_HINT" >&2
    exit 1
  fi
fi

# A remote/rootless engine chosen via DOCKER_HOST is not ours to start.
if [ -n "${DOCKER_HOST:-}" ] && [ "$DOCKER_HOST" != unix:///var/run/docker.sock ]; then
  echo "ensure-docker: \`docker info\` fails for DOCKER_HOST=$DOCKER_HOST; start that engine (or unset DOCKER_HOST)." >&2
  exit 1
fi

# wait_ready PID: 0 once `docker info` works, 1 if PID died or TIMEOUT elapsed.
wait_ready() {
  local pid=$1 i
  for ((i = 0; i < TIMEOUT * 2; i++)); do
    docker_ok && return 0
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    sleep 0.5
  done
  return 1
}

# 2. A daemon is already starting (e.g. a parallel run of this script): just wait for it.
if [ -s /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
  wait_ready "$(cat /var/run/docker.pid)" && exit 0
  echo "ensure-docker: dockerd (pid $(cat /var/run/docker.pid)) is running but 'docker info' fails; see $LOG" >&2
  exit 1
fi

if ! is_root; then
  if [ -S /var/run/docker.sock ]; then
    echo "ensure-docker: a Docker daemon is running but $(id -un) cannot use /var/run/docker.sock: run \`sudo usermod -aG docker $(id -un)\` and log in again." >&2
    exit 1
  fi
  echo "ensure-docker: the Docker daemon is not running and starting it needs root: run \`sudo systemctl start docker\` (or start Docker Desktop), or rerun this script as root." >&2
  exit 1
fi

# 3. systemd hosts: let the service manager own the daemon.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  if systemctl start docker >/dev/null 2>&1 && wait_ready ""; then
    echo "ensure-docker: started docker.service"
    exit 0
  fi
fi

# 4. No init system: run dockerd in the background ourselves.
# Storage driver: overlay2 if the kernel can mount overlayfs on the data-root's filesystem,
# otherwise fuse-overlayfs (if installed) and finally vfs (slow, copies every layer, but always works).
overlay_ok() {
  local t
  mkdir -p "$DATA_ROOT"
  t=$(mktemp -d "$DATA_ROOT/.overlay-probe.XXXXXX") || return 1
  mkdir -p "$t/l" "$t/u" "$t/w" "$t/m"
  if mount -t overlay overlay -o "lowerdir=$t/l,upperdir=$t/u,workdir=$t/w" "$t/m" 2>/dev/null; then
    umount "$t/m"; rm -rf "$t"; return 0
  fi
  rm -rf "$t"; return 1
}
drivers=()
if [ -f /etc/docker/daemon.json ] && grep -q '"storage-driver"' /etc/docker/daemon.json; then
  drivers+=("")                                   # respect an explicit admin choice
else
  overlay_ok && drivers+=(overlay2)
  command -v fuse-overlayfs >/dev/null 2>&1 && [ -e /dev/fuse ] && drivers+=(fuse-overlayfs)
  drivers+=(vfs)
fi

# iptables: dockerd needs the nat table for its bridge; where the kernel or sandbox forbids it,
# run without (containers still reach the host via docker0 and published ports use docker-proxy).
net_flags=()
if ! iptables -t nat -S >/dev/null 2>&1; then
  net_flags=(--iptables=false --ip-masq=false)
fi

mkdir -p "$(dirname "$LOG")"
for drv in "${drivers[@]}"; do
  flags=("${net_flags[@]}")
  [ -n "$drv" ] && flags+=(--storage-driver="$drv")
  echo "=== $(date -u +%FT%TZ) ensure-docker: dockerd ${flags[*]}" >>"$LOG"
  setsid nohup dockerd --data-root "$DATA_ROOT" "${flags[@]}" >>"$LOG" 2>&1 </dev/null &
  pid=$!
  if wait_ready "$pid"; then
    echo "ensure-docker: started dockerd (pid $pid, storage driver ${drv:-from daemon.json}${net_flags:+, iptables off}, log $LOG)"
    exit 0
  fi
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
done

echo "ensure-docker: could not start dockerd (tried storage drivers: ${drivers[*]}); last log lines of $LOG:" >&2
tail -n 25 "$LOG" >&2
exit 1
