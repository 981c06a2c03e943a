#!/usr/bin/env bash
# Runs every loom model (the lib models of weft-actors and the tests of
# weft-loom-tests), each in a process of its own: a model whose failure
# turns into a double panic (loom's deadlock report while unwinding) aborts
# only its own process, and every other model still reports. Prints the
# failures, then one `test result:` line for CI's tally; exits non-zero if
# any model failed.
#
#   scripts/loom.sh                 # LOOM_MAX_PREEMPTIONS=3 unless set
#   scripts/loom.sh gate release    # only models whose names contain a word
#
# Each model may take LOOM_MODEL_LIMIT seconds (default 600). The models of
# loom-tests/pipeline.rs check a whole application built on weft, a far
# longer run per schedule than a protocol's model: they run at
# LOOM_APP_PREEMPTIONS (default 1), where they take a few minutes in all.
set -uo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg weft_loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
limit="${LOOM_MODEL_LIMIT:-600}"
target=target/loom

# The test binaries, built once.
binaries() {
    cargo test --release --target-dir "$target" "$@" --no-run --message-format=json |
        python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])
'
}
bins=$(binaries -p weft-actors --lib) || { echo "loom: the weft-actors models did not build"; exit 1; }
more=$(binaries -p weft-loom-tests --test models --test exchange) || { echo "loom: the weft-loom-tests models did not build"; exit 1; }
app=$(binaries -p weft-loom-tests --test pipeline) || { echo "loom: the application's models did not build"; exit 1; }
bins="$bins $more $app"

passed=0
failed=0
failures=()
for bin in $bins; do
    bound=$LOOM_MAX_PREEMPTIONS
    [ "$bin" = "$app" ] && bound="${LOOM_APP_PREEMPTIONS:-1}"
    for name in $("$bin" --list --format terse | sed -n 's/: test$//p'); do
        if [ $# -gt 0 ]; then
            wanted=0
            for word in "$@"; do
                case "$name" in *"$word"*) wanted=1 ;; esac
            done
            [ "$wanted" = 1 ] || continue
        fi
        start=$(date +%s)
        if out=$(LOOM_MAX_PREEMPTIONS=$bound timeout "$limit" "$bin" --exact "$name" --test-threads=1 2>&1); then
            passed=$((passed + 1))
            echo "loom: $name ok ($(($(date +%s) - start)) s)"
        else
            rc=$?
            failed=$((failed + 1))
            failures+=("$name")
            why="exit $rc"
            [ "$rc" = 124 ] && why="ran past ${limit} s"
            [ "$rc" -ge 128 ] && why="killed by signal $((rc - 128)) (an abort: a double panic?)"
            echo "loom: $name FAILED ($why)"
            printf '%s\n' "$out" | grep -E "panicked at|assert|left:|right:|deadlock" | head -n 8 | sed 's/^/    /'
        fi
    done
done

if [ "$failed" -gt 0 ]; then
    echo "loom: failed: ${failures[*]}"
    echo "test result: FAILED. $passed passed; $failed failed"
    exit 1
fi
echo "test result: ok. $passed passed; 0 failed"
