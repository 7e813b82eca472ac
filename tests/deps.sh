#!/usr/bin/env bash
# Install the Debian packages the lab and the tests need, only when one is missing.
set -euo pipefail
# chromium: the kubesphere scenario opens the console in it (headless).
# python3-venv: make venv builds .venv from Debian's python3 (the Makefile says why).
packages=(podman runc debootstrap busybox-static openssh-client rsync git libseccomp-dev chromium python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm build KubeSphere's console (the bundle); any Node.js from 18 on does (NodeSource's brings its npm).
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing Debian packages (${missing[*]}); run as root or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
