#!/usr/bin/env bash
# Runs the actors and runtime test binaries under valgrind's memcheck:
# invalid reads and writes, uses of uninitialised memory, bad frees, and
# memory definitely or indirectly lost at exit all fail the run.
#
#   scripts/valgrind.sh                    # the default set below
#   scripts/valgrind.sh actor_panic runtime_bad_input   # these integration tests
#
# An integration test is named by its file: tests/NAME.rs is a binary of
# its own, tests/it/NAME.rs (or NAME/mod.rs) a module of the `it` binary, which then runs
# filtered to that module's tests (`NAME::`). Release builds (with debug
# info, as the workspace profile has it); each run has one test thread.
# Exit status: 0 when every run is clean, 1 otherwise. Needs valgrind
# (3.19 or later).
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
    runtime_bad_input
    runtime_stress
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

separate=()
modules=()
for t in "${tests[@]}"; do
    if [ -e "tests/$t.rs" ]; then
        separate+=("$t")
    elif [ -e "tests/it/$t.rs" ] || [ -e "tests/it/$t/mod.rs" ]; then
        modules+=("$t")
    else
        echo "valgrind.sh: no integration test $t (tests/$t.rs, tests/it/$t.rs or tests/it/$t/mod.rs)" >&2
        exit 2
    fi
done

# Each run: a name to report, a binary, and the filter it runs with.
names=()
binaries=()
filters=()
run() { names+=("$1"); binaries+=("$2"); filters+=("$3"); }
while read -r bin; do run "$(basename "$bin")" "$bin" ""; done < <(
    executables -p weft-actors -p weft --lib
)
args=()
for t in "${separate[@]}"; do args+=(--test "$t"); done
[[ ${#modules[@]} -gt 0 ]] && args+=(--test it)
while read -r bin; do
    name=$(basename "$bin")
    if [[ ${name%-*} == it ]]; then
        for m in "${modules[@]}"; do run "$name ($m)" "$bin" "$m::"; done
    else
        run "$name" "$bin" ""
    fi
done < <(executables -p weft-tests "${args[@]}")

failed=()
for i in "${!binaries[@]}"; do
    name=${names[$i]}
    bin=${binaries[$i]}
    filter=()
    [[ -n ${filters[$i]} ]] && filter=("${filters[$i]}")
    printf '\n==> valgrind %s\n' "$name"
    log=$(mktemp)
    start=$SECONDS
    if "$valgrind" --tool=memcheck --error-exitcode=1 \
        --leak-check=full --show-leak-kinds=definite \
        --errors-for-leak-kinds=definite \
        --suppressions=scripts/valgrind.supp \
        --log-file="$log" \
        "$bin" --test-threads=1 -q "${filter[@]}"; then
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
    echo "valgrind: ${#binaries[@]} runs clean"
else
    echo "valgrind: ${#failed[@]} of ${#binaries[@]} runs failed: ${failed[*]}"
    exit 1
fi
