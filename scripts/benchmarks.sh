#!/usr/bin/env bash
# Runs every benchmark of examples/benchmarks/ in turn, each printing its
# medians and ratios against a baseline run in the same process. Extra
# arguments go to `compare` (`--quick`, `--only CASE`, `--json PATH`).
# `cuda_bench` says `skipped` with the reason on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p weft-examples --examples
cargo build --release -q -p weft-examples --features cuda --example cuda_bench
for bench in lane_bench tensor_bench embedding_bench; do
    printf '\n==> %s\n' "$bench"
    cargo run --release -q -p weft-examples --example "$bench"
done
printf '\n==> einsum_bench (the large instances left out: gm_queen5_5_3 alone takes minutes)\n'
cargo run --release -q -p weft-examples --example einsum_bench -- --skip-large
printf '\n==> compare\n'
cargo run --release -q -p weft-examples --example compare -- "$@"
printf '\n==> cuda_bench\n'
cargo run --release -q -p weft-examples --features cuda --example cuda_bench
