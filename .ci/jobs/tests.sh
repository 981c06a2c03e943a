#!/usr/bin/env bash
# The workspace's tests, as the README runs them.
source "$(dirname "$0")/../lib.sh"

step "tests (the README's test command)"
tests cargo test --workspace --profile checked
