#!/usr/bin/env bash
# Installs every Debian 12 package mstar needs to build and test.
# Idempotent: packages already present are skipped, and when nothing is
# missing the script prints nothing and touches no package list.
set -euo pipefail

# clang-14 and libclang-rt-14-dev build the fuzz preset (libFuzzer with
# AddressSanitizer and UndefinedBehaviorSanitizer); libxxhash-dev checksums
# snapshots; libssl-dev is the TLS of mstar-serve --ssl-cert, and the openssl
# program makes the certificates its test serves.
packages=(
  build-essential cmake ninja-build pkg-config git
  libcli11-dev libyaml-cpp-dev libfmt-dev nlohmann-json3-dev doctest-dev
  libopenblas-dev libpcre2-dev libutf8proc-dev libxxhash-dev python3-numpy libcpp-httplib-dev libssl-dev openssl
  clang-14 libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
