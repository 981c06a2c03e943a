#!/usr/bin/env bash
# The docs build, warnings as errors, with and without the cuda and mpi features.
source "$(dirname "$0")/../lib.sh"

step "docs (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p weft --features cuda
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p weft-mpi -p weft --features mpi
