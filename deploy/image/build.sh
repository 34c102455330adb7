#!/usr/bin/env bash
# Builds the service image from the project's Dockerfile with podman, on a machine without a Docker
# engine or an image registry (CI's): the base image is made from Debian's packages instead of the
# official Python image.
#
#   deploy/image/build.sh [TAG [BUILD OPTIONS]]   # TAG: localhost/activestream:test by default
#
# 1. podman, runc and debootstrap from Debian, when missing.
# 2. The base, localhost/pybase:3.11: a Debian minbase with Python 3.11 (debootstrap), imported as an
#    image. It is labelled with a hash of its inputs (the packages, the suite, the mirror and the
#    text of step 2 below) and reused while they are unchanged.
# 3. `podman build --format docker` (keeps HEALTHCHECK) of the Dockerfile with PYTHON_IMAGE set to
#    that base, the host's network, and the host's pip configuration mounted read-only so that pip in
#    the build reaches the same package index with the same certificates. podman caches the layers:
#    a second run with an unchanged context takes seconds.
#
# Environment: CONTAINERS_CONF (default: containers.conf beside this script), DEBIAN_MIRROR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tag=${1:-localhost/activestream:test}
shift || true  # the rest go to podman build (e.g. --no-cache)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
podman=(podman --runtime runc)

SUITE=bookworm
PACKAGES=python3.11,python3.11-venv,python3-pip,ca-certificates
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=localhost/pybase:3.11

say() { echo "build.sh: $*" >&2; }

# -- 1. the tools ------------------------------------------------------------------------------------
missing=()
for tool in podman runc debootstrap; do
    command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin:/sbin command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    say "installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends podman runc debootstrap >/dev/null
fi
export PATH=$PATH:/usr/sbin:/sbin

# -- 2. the base -------------------------------------------------------------------------------------
inputs="suite=$SUITE packages=$PACKAGES mirror=$MIRROR"
key=$({ echo "$inputs"; sed -n '/^# -- 2. the base/,/^# -- 3. the image/p' "$0"; } | sha256sum | cut -c1-16)
if [ "$("${podman[@]}" image inspect --format '{{ index .Labels "activestream.base" }}' "$BASE" 2>/dev/null)" = "$key" ]; then
    say "base $BASE is up to date ($inputs)"
else
    say "making the base $BASE from Debian's packages ($inputs)"
    rootfs=$(mktemp -d /var/tmp/pybase.XXXXXX)
    trap 'rm -rf "$rootfs"' EXIT
    debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 \
        || { tail -n 30 "$rootfs.log" >&2; exit 1; }
    rm -f "$rootfs.log"
    ln -sf python3 "$rootfs/usr/bin/python"  # the official image's `python`
    # what a container never reads: package lists, caches, manuals and translations
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/log/* \
        "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
    find "$rootfs/usr/share/doc" -mindepth 2 ! -name copyright -delete 2>/dev/null || true
    tar -C "$rootfs" -c . | "${podman[@]}" import \
        --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' \
        --change "LABEL activestream.base=$key" - "$BASE" >/dev/null
    rm -rf "$rootfs"
    trap - EXIT
fi

# -- 3. the image ------------------------------------------------------------------------------------
# The host's pip configuration, merged into one file mounted as the build's /etc/pip.conf, and every
# file or folder it names (certificate bundle, constraints, local indexes and wheel folders).
pipconf=$(mktemp -d)
trap 'rm -rf "$pipconf"' EXIT
mounts=()
python3 - "$pipconf/pip.conf" <<'PY' >"$pipconf/paths"
import configparser, os, re, subprocess, sys
listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
conf = configparser.ConfigParser(interpolation=None)
for line in listed.splitlines():
    m = re.match(r"^([^.]*)\.([^=]+)='(.*)'$", line)
    if not m:
        continue
    section = m[1] if m[1] not in ("", ":env:") else "global"
    if not conf.has_section(section):
        conf.add_section(section)
    conf.set(section, m[2], m[3])
    for word in m[3].split():
        # a file:// index is a folder whose pages link to files beside it: mount its parent
        path = os.path.dirname(word.removeprefix("file://").rstrip("/")) if word.startswith("file://") else word
        if path.startswith("/") and os.path.exists(path):
            print(f"{os.path.realpath(path)}:{path}")
with open(sys.argv[1], "w") as f:
    conf.write(f)
PY
mounts+=(-v "$pipconf/pip.conf:/etc/pip.conf:ro")
while read -r pair; do
    mounts+=(-v "$pair:ro")
done < <(sort -u "$pipconf/paths")
say "building $tag from $root/Dockerfile on $BASE (pip: ${#mounts[@]} mounts)"
before=$("${podman[@]}" image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
"${podman[@]}" build --format docker --network host --build-arg PYTHON_IMAGE="$BASE" \
    "${mounts[@]}" "$@" -t "$tag" "$root"
# the image the tag named before, unless something still uses it (podman keeps the layer cache)
if [ -n "$before" ] && [ "$before" != "$("${podman[@]}" image inspect --format '{{.Id}}' "$tag")" ]; then
    "${podman[@]}" rmi "$before" >/dev/null 2>&1 || true
fi
