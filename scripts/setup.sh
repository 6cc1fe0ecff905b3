#!/usr/bin/env bash
# Installs every Debian package that graphc's build and tests need. Idempotent: when every
# package is already installed it only runs dpkg-query and returns in well under a second.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache g++ pkg-config
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools clang-19 lld-19 libclang-rt-19-dev
  libflatbuffers-dev flatbuffers-compiler nlohmann-json3-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libopenblas-dev
  chromium
  libhdf5-dev
  coinor-libcbc-dev
  libgtest-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  python3-torch python3-torchvision python3-onnx python3-numpy python3-h5py
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
