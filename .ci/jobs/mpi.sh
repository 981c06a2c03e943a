#!/usr/bin/env bash
# The `mpi` feature: the test runs itself under mpirun as jobs of 2 and 4
# ranks, the sliced-contraction example checks its result on 2 ranks
# against 1, and the Lanczos example its Ritz value against raw rsmpi's.
source "$(dirname "$0")/../lib.sh"

step "tests of the mpi feature"
tests cargo test --release -p weft-mpi --features mpi --lib
# The doctests of the mpi feature's calls (compiled; those that need
# mpirun are no_run).
tests cargo test --release -p weft --features mpi --doc
tests cargo test --release -p weft-tests --features mpi --test mpi_ranks
cargo build --release -q -p weft-examples --features mpi --example sliced_contraction --example lanczos_mpi
mpirun --allow-run-as-root --oversubscribe -n 2 target/release/examples/sliced_contraction
# The distributed Lanczos: weft's tridiagonal matrix against raw rsmpi's.
mpirun --allow-run-as-root --oversubscribe -n 2 target/release/examples/lanczos_mpi
