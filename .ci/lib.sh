# shellcheck shell=bash
# Sourced by .ci/run and by every job in .ci/jobs: the repository root as
# the working directory, strict mode, the step banner and the tally of test
# results. Under .ci/run, CI_RESULTS names the file that every job's test
# commands append to; a job run alone (`bash .ci/jobs/tests.sh`) keeps its
# own and prints its own tally when it succeeds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TERM_COLOR=never

step() { printf '\n==> %s\n' "$*"; }

# Runs a test command, keeping its summary lines for the tally at the end.
tests() { "$@" 2>&1 | tee -a "$CI_RESULTS"; }

# The line `ci: N passed, M failed`, summed over the `test result:` lines
# of a results file.
tally() {
    local passed failed
    passed=$({ grep -oE '^test result: [a-zA-Z]+\. [0-9]+ passed' "$1" || true; } | awk '{s += $4} END {print s + 0}')
    failed=$({ grep -oE '; [0-9]+ failed' "$1" || true; } | awk '{s += $2} END {print s + 0}')
    echo "ci: ${passed} passed, ${failed} failed"
}

if [ -z "${CI_RESULTS:-}" ]; then
    CI_RESULTS=$(mktemp)
    job_summary() {
        local rc=$?
        if [ "$rc" = 0 ]; then
            step "summary"
            tally "$CI_RESULTS"
        fi
        rm -f "$CI_RESULTS"
    }
    trap job_summary EXIT
fi
