#!/usr/bin/env bash
# The loom models, linted and run, one model per process.
source "$(dirname "$0")/../lib.sh"

step "loom models (LOOM_MAX_PREEMPTIONS=3, the application models at 1, one model per process)"
export RUSTFLAGS="--cfg weft_loom" LOOM_MAX_PREEMPTIONS=3
cargo clippy --release --target-dir target/loom -p weft -p weft-actors -p weft-loom-tests --all-targets -- -D warnings
tests scripts/loom.sh
