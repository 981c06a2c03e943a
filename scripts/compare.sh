#!/usr/bin/env bash
# Runs the comparison harness, then the numpy comparison on its JSON.
# Arguments go to the harness (for example --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
json=target/compare.json
cargo run --release -p weft-examples --example compare -- --json "$json" "$@"
if command -v python3 >/dev/null; then
    python3 scripts/numpy_compare.py "$json"
else
    echo "skip: python3 not found, no numpy comparison"
fi
