#!/usr/bin/env python3
"""Runs the harness's GEMM, elementwise and einsum cases in numpy, on the same
sizes and with the same thread count, and prints weft/numpy speed ratios.

    cargo run --release -p weft-examples --example compare -- --json target/compare.json
    python3 scripts/numpy_compare.py target/compare.json [--json target/numpy.json]

The JSON is what `compare --json PATH` writes; cases it lacks (a run with
`--only`) are skipped. Without numpy the script says so and exits 0.
`--json PATH` also writes numpy's GEMM figures (`{"rows": [{"id", "gflops"}]}`,
ids as the harness's roofline rows), which `compare --plot DIR --from
target/compare.json --numpy PATH` draws beside weft's.

Environment: numpy's BLAS (OpenBLAS in the wheels) is limited to the harness's
threads per domain through OPENBLAS_NUM_THREADS / OMP_NUM_THREADS /
MKL_NUM_THREADS. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, where set, pin
OpenBLAS to a core type or cache size that may not be this machine's; the
script removes both from its own process environment only (before numpy
loads) so OpenBLAS detects the CPU itself. Nothing outside this process
changes.
"""

import argparse
import json
import os
import statistics
import sys
import time

EINSUM = "bij,bjk->bik"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", help="the JSON written by `compare --json PATH`")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--json", dest="out", help="write numpy's GEMM GFLOP/s here, for compare --numpy")
    return p.parse_args()


def median_ms(reps, f):
    """Runs f once to warm up, then reps times; the median in milliseconds."""
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    args = parse_args()
    with open(args.json, encoding="utf-8") as f:
        harness = json.load(f)
    threads = harness["machine"]["threads_per_domain"]
    rows = {row["id"]: row for row in harness["rows"]}

    # Before numpy loads: the same threads as the domain, and the CPU's own
    # OpenBLAS kernels (see the module docs).
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    removed = [v for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if os.environ.pop(v, None) is not None]
    try:
        import numpy as np
    except ImportError:
        print("skip: numpy is not installed for", sys.executable, "(pip install numpy)")
        return 0

    print(f"numpy {np.__version__}, {threads} BLAS thread(s); harness run: {harness['command']}")
    if removed:
        print(f"removed from this process's environment: {', '.join(removed)}")
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        print(f"BLAS: {blas.get('name')} {blas.get('version', '')}")
    except Exception:  # older numpy: no dict mode
        pass

    rng = np.random.default_rng(0)
    scale = 3 if args.quick else 1
    results = []  # (what, weft ms, numpy ms, numpy what)

    for n in (512, 1024, 2048):
        row = rows.get(f"gemm-{n}")
        if row is None:
            continue
        a = rng.standard_normal((n, n))
        b = rng.standard_normal((n, n))
        reps = max(3 if n >= 2048 else 7 // scale, 3)
        numpy_ms = median_ms(reps, lambda: a @ b)
        results.append((row["what"], row["weft"]["value"], numpy_ms, "a @ b"))

    row = rows.get("add-64MiB")
    if row is not None:
        n = 64 * 1024 * 1024 // 8
        x = rng.standard_normal(n)
        y = rng.standard_normal(n)
        numpy_ms = median_ms(max(7 // scale, 3), lambda: np.add(x, y))
        results.append((row["what"], row["weft"]["value"], numpy_ms, "np.add(x, y)"))

    row = rows.get("einsum_batch")
    if row is not None:
        a = rng.standard_normal((64, 64, 64))
        b = rng.standard_normal((64, 64, 64))
        reps = max(15 // scale, 3)
        numpy_ms = median_ms(reps, lambda: np.einsum(EINSUM, a, b, optimize=True))
        results.append((row["what"], row["weft"]["value"], numpy_ms, "np.einsum(optimize=True)"))
        matmul_ms = median_ms(reps, lambda: np.matmul(a, b))
        results.append((row["what"], row["weft"]["value"], matmul_ms, "np.matmul (batched)"))

    # The roofline's GEMMs: numpy's GFLOP/s and its fraction of the peak
    # the harness measured, beside weft's.
    roofline = []  # (what, weft GFLOP/s, weft's BLAS provider GFLOP/s or None, numpy GFLOP/s, peak)
    numpy_gemm = []  # (the roofline row's id, numpy GFLOP/s)
    dtypes = {"f32": np.float32, "f64": np.float64, "c64": np.complex128}
    for dtype, np_type in dtypes.items():
        for n in (64, 128, 256, 512, 1024, 2048):
            row = rows.get(f"roofline-gemm-{dtype}-{n}")
            if row is None:
                continue
            a = rng.standard_normal((n, n)).astype(np_type)
            b = rng.standard_normal((n, n)).astype(np_type)
            if dtype == "c64":
                a = a + 1j * rng.standard_normal((n, n))
                b = b + 1j * rng.standard_normal((n, n))
            runs = max(1, min(256, (1 << 27) // n**3))
            reps = max((3 if n >= 1024 else 7) // scale, 3)
            ms = median_ms(reps, lambda: [a @ b for _ in range(runs)])
            flops = (8 if dtype == "c64" else 2) * n**3 * runs
            provider = rows.get(f"roofline-gemm-blas-{dtype}-{n}")
            blas_gf = provider["weft"]["value"] if provider else None
            numpy_gf = flops / (ms * 1e-3) / 1e9
            roofline.append((row["what"], row["weft"]["value"], blas_gf, numpy_gf, row.get("peak")))
            numpy_gemm.append((row["id"], numpy_gf))

    if not results and not roofline:
        print("no GEMM, add, einsum or roofline rows in", args.json)
        return 0
    if args.out:
        rows = [{"id": ident, "gflops": gflops} for ident, gflops in numpy_gemm]
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"numpy": np.__version__, "threads": threads, "rows": rows}, f, indent=1)
            f.write("\n")
        print("wrote", args.out)
    if roofline:
        print()
        print(f"{'case':<24} {'weft GFLOP/s':>13} {'weft BLAS':>10} {'numpy GFLOP/s':>14} {'numpy of peak':>14} {'weft / numpy':>13} {'weft BLAS / numpy':>18}")
        for what, weft_gf, blas_gf, numpy_gf, peak in roofline:
            of_peak = f"{100 * numpy_gf / peak:.0f} %" if peak else "—"
            blas = f"{blas_gf:.1f}" if blas_gf else "—"
            blas_ratio = f"{blas_gf / numpy_gf:.2f}" if blas_gf else "—"
            print(f"{what:<24} {weft_gf:>13.1f} {blas:>10} {numpy_gf:>14.1f} {of_peak:>14} {weft_gf / numpy_gf:>13.2f} {blas_ratio:>18}")
    if not results:
        return 0
    print()
    print(f"{'case':<38} {'weft ms':>10} {'numpy ms':>10}  {'numpy call':<26} {'weft speed / numpy':>18}")
    for what, weft_ms, numpy_ms, call in results:
        print(f"{what:<38} {weft_ms:>10.2f} {numpy_ms:>10.2f}  {call:<26} {numpy_ms / weft_ms:>18.2f}")
    print("\nabove 1: weft is faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
