#!/usr/bin/env python3
"""Mutation check of the loom models: plants plausible concurrency bugs in
weft-actors one at a time, runs every loom model against each
(scripts/loom.sh, one model per process), and says which mutants the models
caught. Survivors are then run against the crate's normal tests.

    scripts/loom_mutants.py              # every mutant
    scripts/loom_mutants.py gate release # those whose names contain a word

Slow (a release build and every model per mutant, 2.5 to 11 minutes each
on 2 cores): run on demand, not in every CI run. docs/reliability.md keeps
the last result. Each model may run LOOM_MODEL_LIMIT seconds (default
120); one that runs past it found nothing, so it is reported apart and
is not a catch. Each file is restored after its mutant, also when the
script is interrupted.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "actors" / "src"

# (name, file, original text, mutated text, what the bug would be). Each
# original must occur exactly once in its file.
MUTANTS = [
    ("gate-enter-relaxed", "gate.rs",
     "self.state.fetch_add(ONE, Ordering::Acquire)",
     "self.state.fetch_add(ONE, Ordering::Relaxed)",
     "a submitter's entry no longer acquires the close"),
    ("gate-leave-relaxed", "gate.rs",
     "self.state.fetch_sub(ONE, Ordering::Release)",
     "self.state.fetch_sub(ONE, Ordering::Relaxed)",
     "a leave no longer publishes the op queued before it"),
    ("gate-quiescent-relaxed", "gate.rs",
     "self.state.load(Ordering::Acquire) & !WAITING == CLOSED",
     "self.state.load(Ordering::Relaxed) & !WAITING == CLOSED",
     "the closer's quiescence check no longer acquires the leaves"),
    ("gate-arm-relaxed", "gate.rs",
     ".fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {",
     ".fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {",
     "the actor's arm-and-check no longer acquires the leaves"),
    ("gate-leave-no-poke", "gate.rs",
     "        last_for_waiter\n    }",
     "        false\n    }",
     "the last one out never pokes the armed actor (a lost wake-up)"),
    ("ticket-publish-relaxed", "ticket.rs",
     "self.done.store(true, Ordering::Release);",
     "self.done.store(true, Ordering::Relaxed);",
     "a ticket's value is published without release"),
    ("event-drain-before-resolve", "ticket.rs",
     "            state.resolved = true;\n",
     "            let early = std::mem::take(&mut state.dependents);\n"
     "            drop(state);\n"
     "            let mut state = self.state.lock();\n"
     "            state.resolved = true;\n"
     "            state.dependents = early;\n",
     "completion lets go of its lock between taking its dependents and "
     "resolving: a dependent registered in between is never woken"),
    ("ticket-check-relaxed", "ticket.rs",
     "        if !self.done.load(Ordering::Acquire) {",
     "        if !self.done.load(Ordering::Relaxed) {",
     "a waiter reads the value without acquiring it"),
    ("release-swap-relaxed", "release.rs",
     "if !self.pending.swap(true, Ordering::AcqRel) {",
     "if !self.pending.swap(true, Ordering::Relaxed) {",
     "a release's nudge decision no longer orders its name"),
    ("release-drain-swap-relaxed", "release.rs",
     "self.pending.swap(false, Ordering::AcqRel);",
     "self.pending.swap(false, Ordering::Relaxed);",
     "the drain's re-arm no longer orders the names after it"),
    ("release-drain-one", "release.rs",
     "        self.pending.swap(false, Ordering::AcqRel);\n        while let Ok(name) = self.names.try_recv() {",
     "        self.pending.swap(false, Ordering::AcqRel);\n        if let Ok(name) = self.names.try_recv() {",
     "a drain takes one released name, not the batch"),
    ("lane-count-relaxed", "queue.rs",
     "if self.pending.fetch_add(1, Ordering::AcqRel) == 0 {",
     "if self.pending.fetch_add(1, Ordering::Relaxed) == 0 {",
     "a submitter's count no longer publishes the op it counts"),
    ("lane-take-relaxed", "queue.rs",
     "pending.fetch_sub(taken, Ordering::AcqRel) - taken",
     "pending.fetch_sub(taken, Ordering::Relaxed) - taken",
     "the actor's read of the count no longer acquires the ops"),
    ("lane-ready-twice", "queue.rs",
     "if self.pending.fetch_add(1, Ordering::AcqRel) == 0 {",
     "if self.pending.fetch_add(1, Ordering::AcqRel) <= 1 {",
     "a second submitter also sends Ready (a doubled wake-up)"),
    ("lane-close-relaxed", "queue.rs",
     "self.closed.store(true, Ordering::Release);",
     "self.closed.store(true, Ordering::Relaxed);",
     "a lane's close no longer publishes its last counts"),
    ("scheduler-finish-early", "scheduler.rs",
     "if self.closing.is_none() || !self.shared.gate.quiescent_or_arm() {",
     "if self.closing.is_none() || !self.shared.gate.is_closed() {",
     "the actor finishes once the gate is closed, not once it is empty"),
]


def run(cmd, limit, env=None):
    """Runs `cmd` in the repository; its exit code (None if past `limit`)
    and its standard output (the build's chatter on stderr is dropped)."""
    try:
        out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=limit)
        return out.returncode, out.stdout
    except subprocess.TimeoutExpired as e:
        text = e.stdout or b""
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        return None, text


def failing_models(output):
    """The models `scripts/loom.sh` reported failed, as (failed, timed
    out): a model that ran past its time limit found nothing, it only did
    not finish, so it does not count as a catch."""
    failed, timed_out = [], []
    for line in output.splitlines():
        if line.startswith("loom: ") and line.endswith(")") and " FAILED " in line:
            name = line.split()[1]
            (timed_out if "(ran past " in line else failed).append(name)
    return failed, timed_out


def main(words):
    mutants = [m for m in MUTANTS if not words or any(w in m[0] for w in words)]
    env = dict(os.environ, LOOM_MODEL_LIMIT=os.environ.get("LOOM_MODEL_LIMIT", "120"))
    results = []
    for name, file, original, mutated, what in mutants:
        path = SRC / file
        text = path.read_text()
        if text.count(original) != 1:
            print(f"{name}: its original occurs {text.count(original)} times in {file}; "
                  "update the mutant", flush=True)
            results.append((name, "stale", ""))
            continue
        start = time.time()
        try:
            path.write_text(text.replace(original, mutated))
            code, out = run(["scripts/loom.sh"], 3600, env)
            if code is None:
                verdict, by = "caught", "the models ran past an hour"
            elif code != 0 and failing_models(out) == ([], []):
                verdict, by = "no build", " ".join(out.splitlines()[-1:])
            elif failing_models(out)[0]:
                failed, timed_out = failing_models(out)
                verdict, by = "caught", ", ".join(failed)
                if timed_out:
                    by += "; past the time limit: " + ", ".join(timed_out)
            else:
                timed_out = failing_models(out)[1]
                code, out = run(["cargo", "test", "--release", "-q", "-p", "weft-actors"], 1800)
                verdict = "tests only" if code != 0 else "survived"
                by = "the weft-actors tests" if code != 0 else "no model failed"
                if timed_out:
                    by += "; past the time limit: " + ", ".join(timed_out)
        finally:
            path.write_text(text)
        print(f"{name}: {verdict} ({by}) in {time.time() - start:.0f} s: {what}", flush=True)
        results.append((name, verdict, by))
    caught = sum(1 for r in results if r[1] == "caught")
    print(f"\nmutants: {len(results)} tried, {caught} caught by loom, "
          f"{sum(1 for r in results if r[1] == 'tests only')} only by the tests, "
          f"{sum(1 for r in results if r[1] == 'survived')} survived")
    return 0


if __name__ == "__main__":
    # A terminated run still restores the mutated file (`finally`).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main(sys.argv[1:]))
