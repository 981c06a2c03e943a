#!/usr/bin/env bash
# The actors and runtime tests under valgrind's memcheck (installed if missing).
source "$(dirname "$0")/../lib.sh"

step "memcheck: the actors and runtime tests under valgrind"
if ! command -v valgrind >/dev/null; then
    apt-get update -qq && apt-get install -y -qq valgrind
fi
scripts/valgrind.sh
