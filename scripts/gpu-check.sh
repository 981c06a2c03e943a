#!/usr/bin/env bash
# The CUDA checks, for a machine with a GPU but no Rust toolchain.
#
#   scripts/gpu-check.sh build   # here: release binaries with --features cuda into .gpu/
#   scripts/gpu-check.sh selftest  # here: the library search on a fake tree
#   scripts/gpu-check.sh run     # there (with .gpu/ carried): the op-by-op
#                                # comparison against the CPU engine, the
#                                # transfers, CPU+GPU pipelines (a test and
#                                # the cuda_pipeline example), a kernel
#                                # written in Rust (the cube_kernel
#                                # example), then the benchmark (GEMM,
#                                # dispatch, bandwidth)
#
# `.gpu/` is git-ignored, so the device command must carry it: `build` ends
# by printing the exact command. `run` finds NVRTC, cuBLAS and cuSOLVER
# (with the cuSPARSE and nvJitLink it loads) under the
# CUDA toolkit or the Python CUDA wheels (CUDA 12 or 13, the newest by
# version) and links them under the names the loader asks for. Its four
# steps are bounded at 120 + 40 + 40 + 90 s: under 5 minutes in all, start
# included.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu

# The lib$1.so* with the newest version in the folders after it, compared
# by file name, not by path (NVRTC's alternative builds, `*.alt.*`, left
# out).
newest() {
    local name=$1
    shift
    for d in "$@"; do
        for f in "$d"/lib"$name".so*; do
            if [ -e "$f" ]; then printf '%s\t%s\n' "$(basename "$f")" "$f"; fi
        done
    done | grep -v '\.alt\.' | sort -V -k1,1 | tail -1 | cut -f2 || true
}

case "${1:-}" in
build)
    mkdir -p "$out"
    cargo build --release -p weft-examples --features cuda --example cuda_bench --example cuda_pipeline \
        --example cube_kernel
    bin=$(cargo test --release -p weft-tests --features cuda --test cuda_engine --no-run \
        --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "cuda_engine" and m.get("executable"):
        print(m["executable"])')
    # Without their debug info the three fit the device tool's 64 MiB.
    strip -o "$out/cuda_engine" "$bin"
    for example in cuda_bench cuda_pipeline cube_kernel; do
        strip -o "$out/$example" "target/release/examples/$example"
    done
    ls -la "$out"
    echo
    echo "device command: run(command=\"scripts/gpu-check.sh run\", carry=[\".gpu\"], timeout_s=300)"
    ;;
run)
    dirs=()
    for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
        if [ -d "$dir" ]; then dirs+=("$dir"); fi
    done
    for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true); do
        while IFS= read -r dir; do dirs+=("$dir"); done < <(find "$site" -path '*nvidia*' -type d -name lib 2>/dev/null || true)
    done
    libs=$(mktemp -d)
    for name in nvrtc nvrtc-builtins cublas cublasLt cusolver cusparse nvJitLink; do
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
    timeout 120 "$out/cuda_engine" || status=$?
    timeout 40 "$out/cuda_pipeline" || status=$?
    timeout 40 "$out/cube_kernel" || status=$?
    timeout 90 "$out/cuda_bench" || status=$?
    exit "$status"
    ;;
selftest)
    # CUDA 12.9 under the toolkit's path, 13.0 in a wheel whose path sorts
    # first, an alternative build newer than both: 13 must be picked, by
    # version and not by path.
    tree=$(mktemp -d)
    mkdir -p "$tree/z-toolkit" "$tree/a-wheel"
    touch "$tree/z-toolkit/libnvrtc.so.12.9.86" "$tree/z-toolkit/libnvrtc.so.12" \
        "$tree/a-wheel/libnvrtc.so.13.0.48" "$tree/a-wheel/libnvrtc.alt.so.14" \
        "$tree/a-wheel/libnvrtc-builtins.so.13.0"
    got=$(newest nvrtc "$tree/z-toolkit" "$tree/a-wheel")
    none=$(newest cublas "$tree/z-toolkit" "$tree/a-wheel")
    rm -rf "$tree"
    if [ "$(basename "$got")" != libnvrtc.so.13.0.48 ] || [ -n "$none" ]; then
        echo "gpu-check selftest: picked '$got' for nvrtc, '$none' for cublas" >&2
        exit 1
    fi
    echo "gpu-check selftest: newest nvrtc is $(basename "$got"); no cublas found, as planted"
    ;;
*)
    echo "usage: $0 build|run|selftest" >&2
    exit 2
    ;;
esac
