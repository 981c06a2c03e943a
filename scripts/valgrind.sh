#!/usr/bin/env bash
# Runs the actors and runtime test binaries under valgrind's memcheck:
# invalid reads and writes, uses of uninitialised memory, bad frees, and
# memory definitely or indirectly lost at exit all fail the run.
#
#   scripts/valgrind.sh                    # the default set below
#   scripts/valgrind.sh actor_panic bad_input   # these integration tests
#
# Release builds (with debug info, as the workspace profile has it); each
# binary runs with one test thread. Exit status: 0 when every binary is
# clean, 1 otherwise. Needs valgrind (3.19 or later).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# Panics in the tests would otherwise symbolise backtraces, slowly, under valgrind.
export RUST_BACKTRACE=0

valgrind=${VALGRIND:-valgrind}
if ! command -v "$valgrind" >/dev/null; then
    echo "valgrind.sh: $valgrind not found" >&2
    exit 2
fi

# Integration tests of the actors and the runtime: lane order, tickets,
# events, panics, faults, shutdown (chaos included), backpressure,
# re-entry, actor loss, threads, tensor ops, bad input, and the stress
# test at a size valgrind runs in about a minute.
default_tests=(
    lane_order
    actor_panic
    actor_events
    actor_faults
    actor_shutdown
    runtime_shutdown_chaos
    ticket_combinations
    lane_backpressure
    actor_reentry
    actor_loss
    actor_threads
    runtime_smoke
    tensor_lanes
    bad_input
    stress
)
export WEFT_STRESS=${WEFT_STRESS:-20000}
tests=("${@:-${default_tests[@]}}")

# Prints the test executables a `cargo test --no-run` builds (cargo's own
# output goes to stderr; `tee /dev/stderr` would truncate a log file that
# stderr is redirected to).
executables() {
    local out
    out=$(cargo test --release --no-run "$@" 2>&1) || {
        printf '%s\n' "$out" >&2
        return 1
    }
    printf '%s\n' "$out" >&2
    printf '%s\n' "$out" | sed -n 's/^ *Executable .*(\(.*\))$/\1/p'
}

binaries=()
while read -r bin; do binaries+=("$bin"); done < <(
    executables -p weft-actors -p weft --lib
    args=()
    for t in "${tests[@]}"; do args+=(--test "$t"); done
    executables -p weft-tests "${args[@]}"
)

failed=()
for bin in "${binaries[@]}"; do
    name=$(basename "$bin")
    printf '\n==> valgrind %s\n' "$name"
    log=$(mktemp)
    start=$SECONDS
    if "$valgrind" --tool=memcheck --error-exitcode=1 \
        --leak-check=full --show-leak-kinds=definite \
        --errors-for-leak-kinds=definite \
        --suppressions=scripts/valgrind.supp \
        --log-file="$log" \
        "$bin" --test-threads=1 -q; then
        echo "$name: clean ($((SECONDS - start)) s)"
    else
        failed+=("$name")
        echo "$name: FAILED ($((SECONDS - start)) s)"
    fi
    grep -E 'ERROR SUMMARY|definitely lost:|indirectly lost:|possibly lost:|suppressed:' "$log" | sed 's/^==[0-9]*== /  /' || true
    if [[ ${#failed[@]} -gt 0 && ${failed[-1]} == "$name" ]]; then
        cat "$log"
    fi
    rm -f "$log"
done

printf '\n==> summary\n'
if [[ ${#failed[@]} -eq 0 ]]; then
    echo "valgrind: ${#binaries[@]} binaries clean"
else
    echo "valgrind: ${#failed[@]} of ${#binaries[@]} binaries failed: ${failed[*]}"
    exit 1
fi
