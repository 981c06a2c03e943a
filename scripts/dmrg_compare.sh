#!/usr/bin/env bash
# weft's two-site DMRG (`examples/dmrg.rs`), compiled and eager, then TeNPy
# and quimb on the same chain from the same state (scripts/dmrg_peers.py),
# each peer's time per sweep over weft's compiled one.
#
#   scripts/dmrg_compare.sh [L] [CHI] [SWEEPS]     (default 32 32 6)
#
# One process at a time, one thread each (the example: one domain of one
# thread, its actor; the peers with their BLAS and numba threads at 1).
set -euo pipefail
cd "$(dirname "$0")/.."
sites=${1:-32} chi=${2:-32} sweeps=${3:-6}
cargo build --release -p weft-examples --example dmrg
out=$(target/release/examples/dmrg "$sites" "$chi" "$sweeps")
echo "$out"
target/release/examples/dmrg "$sites" "$chi" "$sweeps" --eager | grep "^weft:" | sed 's/^weft:/weft eager:/'
ms=$(echo "$out" | sed -n 's/^weft: \([0-9.]*\) ms.*/\1/p')
if command -v python3 >/dev/null; then
    python3 scripts/dmrg_peers.py "$sites" "$chi" "$sweeps" --weft "$ms"
else
    echo "peers: skipped: python3 not found"
fi
