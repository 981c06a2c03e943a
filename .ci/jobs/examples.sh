#!/usr/bin/env bash
# Every example builds.
source "$(dirname "$0")/../lib.sh"

step "cargo build --examples"
cargo build --release --workspace --examples
