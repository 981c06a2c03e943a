#!/usr/bin/env bash
# The `cuda` feature's tests: they build without a toolkit or driver; checks
# that need a GPU say `skipped: <reason>` and are not counted as passed.
source "$(dirname "$0")/../lib.sh"

step "tests of the cuda feature"
tests cargo test --release -p weft-tests --features cuda --test cuda_discovery
# A kernel written in Rust: cubecl makes its source (the launch needs a GPU).
cargo run --release -p weft-examples --features cuda --example cube_kernel
# The GPU check's library search (newest CUDA by version), on a fake tree.
bash scripts/gpu-check.sh selftest
# NVRTC alone (no GPU needed) compiles the CUDA kernels' source: its
# library comes from the CUDA 12 NVRTC wheel on PyPI. If it cannot be had,
# that check says `skipped` and is not counted.
nvrtc=target/nvrtc
if [ ! -e "$nvrtc/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" ]; then
    mkdir -p "$nvrtc"
    python3 -m pip download -q --no-deps -d "$nvrtc" nvidia-cuda-nvrtc-cu12==12.9.86 &&
        python3 -m zipfile -e "$nvrtc"/nvidia_cuda_nvrtc_cu12-*.whl "$nvrtc" ||
        echo "NVRTC wheel not available: the kernel-source check will skip"
fi
LD_LIBRARY_PATH="$PWD/$nvrtc/nvidia/cuda_nvrtc/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    tests cargo test --release -p weft-tests --features cuda --test cuda_engine
