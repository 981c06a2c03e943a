#!/usr/bin/env python3
"""Recomputes with NumPy the vocabulary cases weft wrote, and compares.

    cargo run --release -p weft-examples --example vocabulary_cases -- target/vocabulary.json
    python3 scripts/numpy_check.py target/vocabulary.json

Every case is an op on seeded inputs of one element type (binary, unary,
comparison, cast, reduction, argmax/argmin, clamp, gather, scatter, dynamic
slice, compress, and einsum with the ellipsis and broadcasting): weft's
output must equal NumPy's exactly for integers and bools, and within a few
ulps for floats. Where weft's stated rule is not NumPy's (none of these
cases: the inputs keep casts in range), the case would say so. Without
numpy the script says so and exits 0. Exits 1 if any case differs.
"""

import json
import math
import sys
import warnings

DTYPES = {
    "f32": "float32",
    "f64": "float64",
    "c32": "complex64",
    "c64": "complex128",
    "i32": "int32",
    "i64": "int64",
    "bool": "bool",
}


def decode(np, t):
    dtype = t["dtype"]
    if dtype == "bool":
        values = [v == "true" for v in t["data"]]
    elif dtype in ("i32", "i64"):
        values = [int(v) for v in t["data"]]
    elif dtype in ("c32", "c64"):
        values = [complex(v.replace("NaN", "nan")) for v in t["data"]]
    else:
        values = [float(v) for v in t["data"]]
    return np.array(values, dtype=DTYPES[dtype]).reshape(t["shape"])


def compute(np, case, xs):
    op, args = case["op"], case["args"]
    binary = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
        "maximum": np.maximum, "minimum": np.minimum, "pow": np.power,
        "floor_div": np.floor_divide, "rem": np.remainder,
        "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
        "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal,
    }
    unary = {
        "neg": np.negative, "abs": np.abs, "sign": np.sign, "conj": np.conj,
        "exp": np.exp, "expm1": np.expm1, "sin": np.sin, "cos": np.cos,
        "tanh": np.tanh, "not": np.invert,
    }
    if op in binary:
        return binary[op](xs[0], xs[1])
    if op in unary:
        return unary[op](xs[0])
    if op == "cast":
        return xs[0].astype(DTYPES[args["dtype"]])
    axes = tuple(args.get("axes", ()))
    x = xs[0]
    exact = x.dtype.kind in "iub"
    if op == "sum":
        return np.sum(x, axis=axes, dtype="int64" if exact else None)
    if op == "prod":
        return np.prod(x, axis=axes, dtype="int64" if exact else None)
    if op == "mean":
        return np.mean(x, axis=axes, dtype="float64" if exact else None)
    if op == "max":
        return np.max(x, axis=axes)
    if op == "min":
        return np.min(x, axis=axes)
    if op == "norm":
        return np.sqrt(np.sum(np.abs(x) ** 2, axis=axes))
    if op == "any":
        return np.any(x, axis=axes)
    if op == "all":
        return np.all(x, axis=axes)
    if op == "argmax":
        return np.argmax(x, axis=args["axis"])
    if op == "argmin":
        return np.argmin(x, axis=args["axis"])
    if op == "clamp":
        lo, hi = args["lo"], args["hi"]
        if exact:
            lo, hi = math.ceil(lo), math.floor(hi)
        return np.clip(x, lo, hi).astype(x.dtype)
    if op == "gather":
        return np.take(x, xs[1], axis=args["axis"])
    if op in ("scatter", "scatter_add"):
        out = x.copy()
        index = (slice(None), xs[1])
        if op == "scatter":
            out[index] = xs[2]
        else:
            np.add.at(out, index, xs[2])
        return out
    if op == "dynamic_slice":
        sizes = args["sizes"]
        starts = [min(max(int(s), 0), n - k) for s, n, k in zip(xs[1], x.shape, sizes)]
        return x[tuple(slice(s, s + k) for s, k in zip(starts, sizes))]
    if op == "compress":
        return x[xs[1]]
    if op == "einsum":
        return np.einsum(args["spec"], *xs)
    raise ValueError(f"no NumPy form for {op}")


def same(np, got, want):
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.dtype}{list(got.shape)} against NumPy's {want.dtype}{list(want.shape)}"
    if got.dtype.kind in "iub":
        bad = np.flatnonzero(got.ravel() != want.ravel())
    else:
        tol = 1e-5 if got.dtype in (np.float32, np.complex64) else 1e-12
        g, w = got.ravel(), want.ravel()
        close = np.isclose(g, w, rtol=tol, atol=tol, equal_nan=True)
        bad = np.flatnonzero(~close)
    if bad.size:
        i = bad[0]
        return f"element {i}: {got.ravel()[i]!r} against NumPy's {want.ravel()[i]!r}"
    return None


def main():
    try:
        import numpy as np
    except ImportError:
        print("numpy is not installed: nothing compared")
        return 0
    path = sys.argv[1] if len(sys.argv) > 1 else "target/vocabulary.json"
    with open(path) as f:
        cases = json.load(f)["cases"]
    failed = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in cases:
            xs = [decode(np, t) for t in case["inputs"]]
            got = decode(np, case["output"])
            with np.errstate(all="ignore"):
                want = np.asarray(compute(np, case, xs))
            problem = same(np, got, want)
            if problem:
                failed += 1
                print(f"DIFFERS  {case['name']}: {problem}")
    print(f"{len(cases) - failed} of {len(cases)} cases equal NumPy {np.__version__}'s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
