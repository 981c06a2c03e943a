#!/usr/bin/env bash
# Formatting and clippy (-D warnings), with and without the optional features.
source "$(dirname "$0")/../lib.sh"

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, -D warnings)"
cargo clippy --workspace --all-targets -- -D warnings

step "clippy with the optional features"
cargo clippy -p weft-core -p weft --features ndarray --all-targets -- -D warnings
cargo clippy -p weft-actors -p weft --features tracing --all-targets -- -D warnings
cargo clippy -p weft-examples --features mimalloc --all-targets -- -D warnings
cargo clippy -p weft-topology -p weft -p weft-tests -p weft-examples --features cuda --all-targets -- -D warnings
cargo clippy -p weft-cpu -p weft -p weft-tests -p weft-examples --features blas --all-targets -- -D warnings
cargo clippy -p weft-mpi -p weft -p weft-tests -p weft-examples --features mpi --all-targets -- -D warnings
