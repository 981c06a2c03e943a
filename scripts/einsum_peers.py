#!/usr/bin/env python3
"""The peers' side of `einsum_bench`: numpy (`optimize=True`, so that a
product goes to BLAS), PyTorch (CPU) and JAX
contracting each instance of the tensor4all einsum benchmark along its
published paths, one binary einsum per step, with the same operands as
the Rust bench (`fill`), median of REPS runs after one warm-up.

    python3 scripts/einsum_peers.py [--only NAME] [--reps N] [--skip-large]
        [--weft target/einsum.json]     # check weft's sums, print ratios
        [--json PATH --threads N]       # the figures, for einsum_chart.py

Each peer that cannot be imported is reported as `skipped: <reason>`.
Threads: set OMP_NUM_THREADS / MKL_NUM_THREADS (and XLA_FLAGS for JAX)
before running, as the published figures did; unset OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE. With `--weft`, each row also gives weft's best time
(`steps` or `one`, the same path) over the best peer's, and every sum is
compared with numpy's (relative 1e-6).
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "examples", "benchmarks", "data", "einsum_instances.json")


def fill(inst):
    """The operands' values, as einsum_bench.rs makes them."""
    import numpy as np

    lhs, out = inst["subscripts"].split("->")
    labels = lhs.split(",")
    holders, extent = {}, {}
    for ls, shape in zip(labels, inst["shapes"]):
        for c, e in zip(ls, shape):
            holders[c] = holders.get(c, 0) + 1
            extent[c] = e
    arrays = []
    for t, (ls, shape) in enumerate(zip(labels, inst["shapes"])):
        scale = 1.0
        for c in ls:
            if c not in out:
                scale *= extent[c] ** (-1.0 / holders[c])
        n = math.prod(shape)
        k = np.arange(n, dtype=np.float64)
        arrays.append((scale * (1.0 + 0.5 * np.sin(0.7 * k + 1.3 * t + 0.1))).reshape(shape))
    return labels, out, arrays


def steps(labels, out, path):
    """Each step's (i, j, subscripts), as einsum_bench.rs builds them."""
    terms = list(labels)
    plan = []
    for k, (i, j) in enumerate(path):
        i, j = min(i, j), max(i, j)
        b = terms.pop(j)
        a = terms.pop(i)
        if k + 1 == len(path):
            keep = out
        else:
            keep = ""
            for c in a + b:
                if (c in out or any(c in t for t in terms)) and c not in keep:
                    keep += c
        # numpy takes letters only: each step's labels renamed to them
        # (a step has at most 52).
        letters = {c: LETTERS[n] for n, c in enumerate(dict.fromkeys(a + b))}
        spec = "".join(letters.get(c, c) for c in f"{a},{b}->{keep}")
        plan.append((i, j, spec))
        terms.append(keep)
    return plan


def run_steps(einsum, arrays, plan):
    terms = list(arrays)
    for i, j, spec in plan:
        b = terms.pop(j)
        a = terms.pop(i)
        terms.append(einsum(spec, a, b))
    return terms[-1]


def peers():
    """(name, to-array, einsum, sync, skip reason) for each peer."""
    found = []
    try:
        import numpy as np

        found.append(("numpy", lambda x: x, lambda s, a, b: np.einsum(s, a, b, optimize=True), lambda x: x, None))
    except ImportError as e:
        found.append(("numpy", None, None, None, f"not installed ({e})"))
    try:
        import torch

        found.append(
            (
                "torch",
                torch.from_numpy,
                lambda s, a, b: torch.einsum(s, a, b),
                lambda x: x,
                None,
            )
        )
    except ImportError as e:
        found.append(("torch", None, None, None, f"not installed ({e})"))
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        found.append(
            (
                "jax",
                jnp.asarray,
                lambda s, a, b: jnp.einsum(s, a, b),
                lambda x: x.block_until_ready(),
                None,
            )
        )
    except ImportError as e:
        found.append(("jax", None, None, None, f"not installed ({e})"))
    return found


def timed(reps, f):
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--skip-large", action="store_true")
    p.add_argument("--weft", help="JSON written by `einsum_bench --json PATH`")
    p.add_argument("--json", help="write the figures here (for scripts/einsum_chart.py)")
    p.add_argument("--threads", type=int, help="the thread count to record in --json")
    p.add_argument("--peers", help="only these peers, comma-separated (numpy,torch,jax)")
    args = p.parse_args(argv)
    record = []
    with open(DATA, encoding="utf-8") as f:
        data = json.load(f)
    weft = {}
    if args.weft:
        with open(args.weft, encoding="utf-8") as f:
            for row in json.load(f)["rows"]:
                weft[(row["instance"], row["strategy"])] = row
    found = peers()
    if args.peers:
        wanted = args.peers.split(",")
        found = [p for p in found if p[0] in wanted]
    for name, _, _, _, skip in found:
        if skip:
            print(f"{name}: skipped: {skip}")
    live = [p for p in found if p[4] is None]
    header = f"{'instance':<44} {'path':<9} " + " ".join(f"{n + ' ms':>10}" for n, *_ in live)
    if weft:
        header += f" {'weft ms':>10} {'weft/best':>9}"
    print(header)
    mismatches = 0
    for inst in data["instances"]:
        if args.only and args.only not in inst["name"]:
            continue
        largest = max(v["log2_size"] for v in inst["paths"].values())
        if args.skip_large and largest > 25.0:
            print(f"{inst['name']:<44} skipped: intermediates of 2^{largest:.1f} elements")
            continue
        labels, out, arrays = fill(inst)
        for strategy in sorted(inst["paths"], reverse=True):
            plan = steps(labels, out, inst["paths"][strategy]["path"])
            times, sums = [], {}
            for name, convert, einsum, sync, _ in live:
                ops = [convert(a) for a in arrays]
                result = run_steps(einsum, ops, plan)
                sums[name] = float(sync(result).sum())
                times.append(timed(args.reps, lambda: sync(run_steps(einsum, ops, plan))))
            line = f"{inst['name']:<44} {strategy:<9} " + " ".join(f"{t:>10.3f}" for t in times)
            row = weft.get((inst["name"], strategy))
            record.append(
                {
                    "instance": inst["name"],
                    "strategy": strategy,
                    "peers_ms": {name: t for (name, *_), t in zip(live, times)},
                    "weft_ms": min(row["steps_ms"], row["one_ms"]) if row else None,
                }
            )
            if row:
                best_weft = min(row["steps_ms"], row["one_ms"])
                line += f" {best_weft:>10.3f} {best_weft / min(times):>9.2f}"
                want = sums.get("numpy")
                for s in row["sums"]:
                    if want is not None and abs(s - want) > 1e-6 * max(1.0, abs(want)):
                        mismatches += 1
                        line += f"  sum {s} differs from numpy's {want}"
                        break
            print(line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"threads": args.threads, "skipped": [n for n, *_, why in found if why], "rows": record}, f, indent=1)
        print(f"wrote {args.json}")
    if mismatches:
        print(f"{mismatches} instance(s) where weft's sum differs from numpy's")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
