#!/usr/bin/env bash
# Provides reservations/lambda-python3.11:local for `sam local ... --invoke-image`: the official
# public.ecr.aws/lambda/python:3.11 image when it can be pulled, otherwise a look-alike built offline
# from the Debian apt mirror (debootstrap bookworm = Python 3.11, + awslambdaric and boto3 from PyPI).
set -euo pipefail

REPO=reservations/lambda-python3.11
IMAGE=$REPO:local
UPSTREAM=public.ecr.aws/lambda/python:3.11
AWSLAMBDARIC_VERSION=4.2.2
BOTO3_VERSION=1.43.108        # keep in step with the project's boto3 pin
BOTOCORE_VERSION=1.43.108
SUITE=bookworm                # Debian 12 ships CPython 3.11, like the python3.11 Lambda runtime
BASE_PACKAGES=python3,ca-certificates
BASE_RECIPE_VERSION=1         # bump when the debootstrap/cleanup steps below change
CACHE=${LAMBDA_IMAGE_CACHE:-/var/cache/reservations-lambda-image}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { echo "build-lambda-image: $*"; }
die() { echo "build-lambda-image: $*" >&2; exit 1; }

"$here/ensure-docker.sh"

case "$(uname -m)" in
  x86_64 | amd64) deb_arch=amd64 py_arch=x86_64 ;;
  aarch64 | arm64) deb_arch=arm64 py_arch=aarch64 ;;
  *) die "unsupported machine $(uname -m)" ;;
esac

# The image is up to date when the tag stamped with this script's content hash exists.
sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }
script_hash=$(sha256 <"$here/$(basename "${BASH_SOURCE[0]}")" | cut -c1-12)
STAMP=$REPO:build-$script_hash-$deb_arch
image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }

want=$(image_id "$STAMP")
if [ -n "$want" ]; then
  [ "$(image_id "$IMAGE")" = "$want" ] || docker tag "$STAMP" "$IMAGE"
  exit 0
fi

# Called once a new image is tagged: drop older stamps, and SAM's derived "rapid" images (SAM reuses
# them without checking whether the base image changed; it re-creates them on the next invoke).
finish() {
  docker tag "$IMAGE" "$STAMP"
  local ref
  for ref in $(docker images --format '{{.Repository}}:{{.Tag}}' "$REPO") \
             $(docker images --format '{{.Repository}}:{{.Tag}}' samcli/lambda-python); do
    case "$ref" in
      "$STAMP" | "$IMAGE") ;;
      "$REPO":build-* | "$REPO":rapid-* | samcli/lambda-python:3.11-*) docker rmi "$ref" >/dev/null 2>&1 || true ;;
    esac
  done
}

# 1. A machine with internet: use the real thing.
if [ "${LAMBDA_IMAGE_PULL:-1}" = 1 ] && docker pull -q "$UPSTREAM" >/dev/null 2>&1; then
  docker tag "$UPSTREAM" "$IMAGE"
  finish
  exit 0
fi

# 2. Offline: build a compatible image.
[ "$(id -u)" -eq 0 ] || die "cannot pull $UPSTREAM, and building a replacement (debootstrap) needs root: rerun as root."
if ! command -v debootstrap >/dev/null 2>&1; then
  if [ "${AUTO_INSTALL:-0}" = 1 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; } >/tmp/build-lambda-image-apt.log 2>&1 ||
      die "'apt-get install debootstrap' failed, see /tmp/build-lambda-image-apt.log"
  else
    die "cannot pull $UPSTREAM, and building a replacement needs debootstrap: apt-get install debootstrap (or rerun with AUTO_INSTALL=1)."
  fi
fi

# First Debian archive URI that apt is configured with (deb822 *.sources or one-line *.list).
apt_mirror() {
  local suites='^(bookworm|trixie|forky|bullseye|sid|stable|testing|unstable|oldstable)(-updates)?$' f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v RS= -v re="$suites" '
      { types = uris = ss = ""; enabled = 1
        n = split($0, L, "\n")
        for (i = 1; i <= n; i++) {
          if (L[i] ~ /^Types:/)   types = L[i]
          if (L[i] ~ /^URIs:/)    { split(L[i], u, /[ \t]+/); uris = u[2] }
          if (L[i] ~ /^Suites:/)  ss = L[i]
          if (L[i] ~ /^Enabled:[ \t]*no/) enabled = 0
        }
        if (!enabled || types !~ /(^|[ \t])deb([ \t]|$)/ || uris == "") next
        m = split(ss, s, /[ \t]+/)
        for (j = 2; j <= m; j++) if (s[j] ~ re) { print uris; exit }
      }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk -v re="$suites" '$1 == "deb" {
        i = 2; if ($i ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }
        if ($(i + 1) ~ re) { print $i; exit } }' "$f"
  done
}
mirror=${DEBIAN_MIRROR:-$(apt_mirror | head -n1)}
mirror=${mirror:-http://deb.debian.org/debian}

pip_cmd=()
if [ -n "${PIP:-}" ]; then read -r -a pip_cmd <<<"$PIP"
elif python3 -m pip --version >/dev/null 2>&1; then pip_cmd=(python3 -m pip)
elif command -v pip3 >/dev/null 2>&1; then pip_cmd=(pip3)
else die "pip is needed to fetch awslambdaric/boto3 wheels: apt-get install python3-pip (or set PIP=/path/to/pip)."
fi

log "building $IMAGE offline (Debian $SUITE + awslambdaric $AWSLAMBDARIC_VERSION + boto3 $BOTO3_VERSION), ~1 min..."

work=$(mktemp -d /tmp/build-lambda-image.XXXXXX)
cleanup() {
  # debootstrap mounts proc/sys inside the target; never rm -rf through a mount.
  { grep -o " $work/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
root=$work/rootfs
mkdir -p "$CACHE" "$root"

base_key=$(echo "$SUITE|minbase|$BASE_PACKAGES|$deb_arch|$BASE_RECIPE_VERSION" | sha256 | cut -c1-12)
base_tar=$CACHE/rootfs-$SUITE-$deb_arch-$base_key.tar
if [ ! -s "$base_tar" ]; then
  debootstrap --variant=minbase --arch="$deb_arch" --include="$BASE_PACKAGES" "$SUITE" "$root" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap from $mirror failed"; }
  # Slim it: apt indexes/caches, docs and translations are useless in a Lambda image.
  rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
    "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* "$root"/var/log/*.log
  : >"$root/etc/resolv.conf"; rm -f "$root/etc/hostname"   # docker provides both at run time
  tar --numeric-owner -C "$root" -cf "$base_tar.tmp" . && mv "$base_tar.tmp" "$base_tar"
  find "$CACHE" -maxdepth 1 -name "rootfs-*.tar" ! -path "$base_tar" -delete
else
  tar --numeric-owner -C "$root" -xpf "$base_tar"
fi

# The Lambda runtime layer: RIC + boto3 in /var/runtime, as in the official image. Wheels are
# fetched by the host's pip for the target platform, so nothing runs or downloads inside the chroot.
PIP_REQUIRE_VIRTUALENV=0 PIP_BREAK_SYSTEM_PACKAGES=1 "${pip_cmd[@]}" install -q --no-input \
  --disable-pip-version-check --no-warn-conflicts --no-warn-script-location \
  --target "$root/var/runtime" --only-binary=:all: --implementation cp --python-version 3.11 \
  --platform "manylinux_2_28_$py_arch" --platform "manylinux2014_$py_arch" \
  "awslambdaric==$AWSLAMBDARIC_VERSION" "boto3==$BOTO3_VERSION" "botocore==$BOTOCORE_VERSION" \
  >"$work/pip.log" 2>&1 || { tail -n 30 "$work/pip.log" >&2; die "pip install into /var/runtime failed"; }
rm -rf "$root/var/runtime/bin"

mkdir -p "$root/var/task" "$root/opt" "$root/var/lang/bin"
for n in python3.11 python3 python; do ln -sf /usr/bin/python3.11 "$root/var/lang/bin/$n"; done

# RIE (mounted by SAM at /var/rapid) runs /var/runtime/bootstrap when no /var/task or /opt bootstrap exists.
cat >"$root/var/runtime/bootstrap" <<'EOF'
#!/bin/sh
# Runtime bootstrap of reservations/lambda-python3.11:local (stand-in for the official image's).
export AWS_EXECUTION_ENV=AWS_Lambda_python3.11
if [ -n "${AWS_LAMBDA_EXEC_WRAPPER:-}" ]; then
  exec "$AWS_LAMBDA_EXEC_WRAPPER" /var/lang/bin/python3.11 /var/runtime/bootstrap.py
fi
exec /var/lang/bin/python3.11 /var/runtime/bootstrap.py
EOF
# Also what `sam local invoke -d` starts (python3.11 debug entry: /var/lang/bin/python3.11 ... bootstrap.py).
cat >"$root/var/runtime/bootstrap.py" <<'EOF'
"""Start the Lambda Runtime Interface Client with the import path order of the python3.11 runtime."""
import os
import sys

_FRONT = ["/var/task", "/opt/python/lib/python3.11/site-packages", "/opt/python", "/var/runtime"]
sys.path[:] = _FRONT + [p for p in sys.path if p not in _FRONT]

from awslambdaric.__main__ import main  # noqa: E402

main([sys.argv[0], os.environ.get("_HANDLER") or os.environ["AWS_LAMBDA_FUNCTION_HANDLER"]])
EOF
# Same contract as the official image's entrypoint (used when the image runs an Image-type function).
cat >"$root/lambda-entrypoint.sh" <<'EOF'
#!/bin/sh
if [ $# -ne 1 ]; then
  echo "entrypoint requires the handler name to be the first argument" 1>&2
  exit 142
fi
export _HANDLER="$1"
if [ -z "${AWS_LAMBDA_RUNTIME_API:-}" ]; then
  exec /usr/local/bin/aws-lambda-rie /var/runtime/bootstrap
fi
exec /var/runtime/bootstrap
EOF
chmod 755 "$root/var/runtime/bootstrap" "$root/lambda-entrypoint.sh"

tar --numeric-owner -C "$root" -cf - . | docker import \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV TZ=:/etc/localtime' \
  --change 'ENV PATH=/var/lang/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin' \
  --change 'ENV LD_LIBRARY_PATH=/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib' \
  --change 'ENV LAMBDA_TASK_ROOT=/var/task' \
  --change 'ENV LAMBDA_RUNTIME_DIR=/var/runtime' \
  --change 'WORKDIR /var/task' \
  --change 'ENTRYPOINT ["/lambda-entrypoint.sh"]' \
  --change "LABEL org.opencontainers.image.description=\"python3.11 Lambda look-alike built by local/build-lambda-image.sh\" reservations.build-hash=$script_hash" \
  - "$IMAGE" >/dev/null
finish
