#!/usr/bin/env bash
# tools/gpu-bundle.sh [OUT_DIR]
#
# Builds mstar with the CUDA backend here (where the Debian packages and nvcc
# are) for a GPU machine that cannot install packages, and lays out what
# `tools/gpu-check.sh --prebuilt OUT_DIR` runs there:
#   OUT_DIR/bin  mstar_backend_tests, mstar-bench, mstar-run
#   OUT_DIR/lib  the shared libraries they load that are not the C and C++
#                runtimes or CUDA's (fmt, yaml-cpp, OpenBLAS, ...), copied
#                from this machine
# and OUT_DIR.tar.xz, the same compressed. The GPU machine needs a glibc and
# libstdc++ at least as new as this machine's, and the CUDA runtime and cuBLAS
# of the toolkit this build used. Default OUT_DIR: .gpu (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.gpu}
cmake -S . -B build/gpu-bundle -G Ninja -DCMAKE_BUILD_TYPE=Release -DMSTAR_CUDA=ON
cmake --build build/gpu-bundle --target mstar_backend_tests mstar-bench mstar-run
rm -rf "$out" "$out.tar.xz"
mkdir -p "$out/bin" "$out/lib"
bins=(build/gpu-bundle/tests/mstar_backend_tests build/gpu-bundle/apps/mstar-bench build/gpu-bundle/apps/mstar-run)
cp "${bins[@]}" "$out/bin/"
strip "$out"/bin/*
# Every library a binary loads, less the runtimes any Linux with CUDA has.
ldd "${bins[@]}" | awk '/=> \// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
tar -C "$out" -cJf "$out.tar.xz" .
du -sh "$out" "$out.tar.xz"
ls "$out/lib"
