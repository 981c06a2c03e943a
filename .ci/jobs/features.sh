#!/usr/bin/env bash
# The tests of the optional ndarray and BLAS features.
source "$(dirname "$0")/../lib.sh"

step "tests of the optional features"
tests cargo test --release -p weft-core --features ndarray
# The BLAS provider against the plain loops, and through a runtime.
tests cargo test --release -p weft-cpu --features blas --lib
tests cargo test --release -p weft-tests --features blas --test it -- tensor_lanes::
