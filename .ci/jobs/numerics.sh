#!/usr/bin/env bash
# Numeric results against independent references: the vocabulary against
# NumPy, the gradient example's own check, the DMRG against exact
# diagonalization, the derived gradients against JAX.
source "$(dirname "$0")/../lib.sh"

step "the vocabulary against NumPy"
# Every element type's ops recomputed by NumPy (scripts/numpy_check.py);
# skipped, saying so, where NumPy cannot be had.
if python3 -c "import numpy" 2>/dev/null || python3 -m pip install -q numpy 2>/dev/null; then
    cargo run --release -q -p weft-examples --example vocabulary_cases -- target/vocabulary.json
    python3 scripts/numpy_check.py target/vocabulary.json
else
    echo "skipped: numpy is not available"
fi

step "the gradient example (an MPS fitted by its derived gradient, checked)"
cargo run --release -q -p weft-examples --example gradient

step "the DMRG example (L = 16, χ 64: its energy within 1e-8 of exact diagonalization)"
cargo run --release -q -p weft-examples --example dmrg

step "one function compiled and eager (the MPS norm: the same bits both ways)"
cargo run --release -q -p weft-examples --example mps_norm

step "gradients against JAX"
# The derived gradients of a fixed set of programs recomputed by JAX
# (scripts/jax_check.py); skipped, saying so, where JAX cannot be had.
if python3 -c "import jax" 2>/dev/null || python3 -m pip install -q jax 2>/dev/null; then
    cargo run --release -q -p weft-examples --example gradient_cases -- target/gradients.json
    python3 scripts/jax_check.py target/gradients.json
else
    echo "skipped: jax is not available"
fi
