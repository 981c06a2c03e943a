#!/usr/bin/env bash
# Runs the comparison harness, then the numpy comparison on its JSON.
# Arguments go to the harness (for example --quick); with `--plot DIR` the
# charts are drawn after numpy ran, with numpy's GEMMs on them.
set -euo pipefail
cd "$(dirname "$0")/.."
json=target/compare.json
numpy=target/numpy.json
args=()
plot=""
while [ $# -gt 0 ]; do
    case "$1" in
        --plot) plot="${2:?--plot needs a folder}"; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
cargo run --release -p weft-examples --example compare -- --json "$json" "${args[@]}"
rm -f "$numpy"
if command -v python3 >/dev/null; then
    python3 scripts/numpy_compare.py "$json" --json "$numpy"
else
    echo "skip: python3 not found, no numpy comparison"
fi
if [ -n "$plot" ]; then
    with_numpy=()
    [ -f "$numpy" ] && with_numpy=(--numpy "$numpy")
    cargo run --release -p weft-examples --example compare -- --plot "$plot" --from "$json" "${with_numpy[@]}"
fi
