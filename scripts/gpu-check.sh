#!/usr/bin/env bash
# The CUDA checks, for a machine with a GPU but no Rust toolchain.
#
#   scripts/gpu-check.sh build   # here: release binaries with --features cuda into .gpu/
#   scripts/gpu-check.sh run     # there (with .gpu/ carried): the op-by-op
#                                # comparison against the CPU engine, the
#                                # transfers, CPU+GPU pipelines (a test and
#                                # the cuda_pipeline example), then the
#                                # benchmark (GEMM, dispatch, bandwidth)
#
# `run` finds NVRTC and cuBLAS under the CUDA toolkit or the Python CUDA
# wheels and links them under the names the loader asks for. Under 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu

case "${1:-}" in
build)
    mkdir -p "$out"
    cargo build --release -p weft-examples --features cuda --example cuda_bench --example cuda_pipeline
    bin=$(cargo test --release -p weft-tests --features cuda --test cuda_engine --no-run \
        --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "cuda_engine" and m.get("executable"):
        print(m["executable"])')
    # Without their debug info the three fit the device tool's 64 MiB.
    strip -o "$out/cuda_engine" "$bin"
    for example in cuda_bench cuda_pipeline; do
        strip -o "$out/$example" "target/release/examples/$example"
    done
    ls -la "$out"
    ;;
run)
    # The newest lib$1.so* in the folders after it (NVRTC's alternative
    # builds, `*.alt.*`, left out).
    newest() {
        local name=$1
        shift
        for d in "$@"; do ls "$d"/lib"$name".so* 2>/dev/null; done |
            grep -v '\.alt\.' | sort -V | tail -1 || true
    }
    dirs=()
    for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
        if [ -d "$dir" ]; then dirs+=("$dir"); fi
    done
    for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true); do
        while IFS= read -r dir; do dirs+=("$dir"); done < <(find "$site" -path '*nvidia*' -type d -name lib 2>/dev/null || true)
    done
    libs=$(mktemp -d)
    for name in nvrtc nvrtc-builtins cublas cublasLt; do
        found=$(newest "$name" "${dirs[@]}")
        if [ -n "$found" ]; then
            ln -sf "$found" "$libs/lib$name.so"
            echo "lib$name: $found"
        else
            echo "lib$name: not found"
        fi
    done
    path=$libs
    for dir in "${dirs[@]}"; do path="$path:$dir"; done
    export LD_LIBRARY_PATH="$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
    status=0
    timeout 180 "$out/cuda_engine" || status=$?
    timeout 60 "$out/cuda_pipeline" || status=$?
    timeout 100 "$out/cuda_bench" || status=$?
    exit "$status"
    ;;
*)
    echo "usage: $0 build|run" >&2
    exit 2
    ;;
esac
