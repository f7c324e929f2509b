#!/usr/bin/env bash
# Installs the Debian packages the build and tests need (idempotent; quiet when present).
set -euo pipefail
pkgs="build-essential cmake ninja-build libgtest-dev libbenchmark-dev libmimalloc-dev libnuma-dev nlohmann-json3-dev python3 python3-numpy clang libclang-rt-dev lld mono-mcs mono-runtime nodejs cargo golang-go pkg-config libpoppler-cpp-dev libcpp-httplib-dev nginx-light libimgui-dev libglfw3-dev libstb-dev fonts-dejavu-core xvfb xauth libgl1-mesa-dri"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
