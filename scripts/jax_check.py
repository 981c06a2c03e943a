#!/usr/bin/env python3
"""Recomputes with JAX the gradients weft derived, and compares.

    cargo run --release -p weft-examples --example gradient_cases -- target/gradients.json
    python3 scripts/jax_check.py target/gradients.json

Each case is a recorded program (its steps as weft wrote them) with a real
scalar loss; this script runs the same steps with jax.numpy, takes
jax.grad with respect to every input, and compares with weft's gradients.
JAX's gradient of a real loss of a complex input is the conjugate of
weft's (weft gives dL/dx + i dL/dy, as PyTorch), so weft's is compared with
conj(JAX's). The decompositions' losses do not depend on the gauge of
their factors, so LAPACK's signs and phases (JAX's) and faer's (weft's)
give the same values. Prints the largest relative error per case; exits 1
if one is above 1e-9. Without JAX the script says so and exits 0.
"""

import json
import sys

DTYPES = {"f32": "float32", "f64": "float64", "c32": "complex64", "c64": "complex128"}


def decode(np, t):
    dtype = t["dtype"]
    if dtype in ("c32", "c64"):
        values = [complex(v.replace("NaN", "nan")) for v in t["data"]]
    else:
        values = [float(v) for v in t["data"]]
    return np.array(values, dtype=DTYPES[dtype]).reshape(t["shape"])


def run(jnp, program, args):
    """The program's steps on `args` (JAX arrays), as weft defines them."""
    values = {}
    for index, value in zip(program["inputs"], args):
        values[index] = value
    binary = {
        "add": jnp.add,
        "sub": jnp.subtract,
        "mul": jnp.multiply,
        "div": jnp.divide,
        "maximum": jnp.maximum,
        "minimum": jnp.minimum,
        "pow": jnp.power,
    }
    unary = {
        "neg": jnp.negative,
        "exp": jnp.exp,
        "log": jnp.log,
        "sin": jnp.sin,
        "cos": jnp.cos,
        "tanh": jnp.tanh,
        "sqrt": jnp.sqrt,
        "conj": jnp.conj,
        "abs": jnp.abs,
    }
    for s in program["steps"]:
        step, xs = s["step"], [values[a] for a in s["args"]]
        op = step["op"]
        if op == "binary":
            out = binary[step["fn"]](xs[0], xs[1])
        elif op == "unary":
            out = unary[step["fn"]](xs[0])
        elif op == "binary_scalar":
            re, im = step["value"]
            scalar = complex(re, im) if im != 0 else re
            f = binary[step["fn"].removesuffix("_scalar")]
            out = f(scalar, xs[0]) if step["first"] else f(xs[0], scalar)
        elif op == "einsum":
            out = jnp.einsum(step["spec"], *xs)
        elif op == "matmul":
            out = jnp.matmul(xs[0], xs[1])
        elif op == "reduce":
            axes, keep = tuple(step["axes"]), step["keep"]
            fn = step["fn"]
            if fn == "norm":
                out = jnp.sqrt(jnp.sum(jnp.abs(xs[0]) ** 2, axis=axes, keepdims=keep))
            else:
                out = {"sum": jnp.sum, "mean": jnp.mean, "max": jnp.max, "min": jnp.min}[fn](
                    xs[0], axis=axes, keepdims=keep
                )
        elif op == "linalg":
            fn = step["fn"]
            if fn == "svd":
                outs = jnp.linalg.svd(xs[0], full_matrices=False)
            elif fn == "eigh":
                outs = jnp.linalg.eigh(xs[0], UPLO="L")
            elif fn == "cholesky":
                outs = (jnp.linalg.cholesky(xs[0]),)
            elif fn == "solve":
                outs = (jnp.linalg.solve(xs[0], xs[1]),)
            elif fn == "qr":
                outs = jnp.linalg.qr(xs[0], mode="reduced")
            else:
                raise ValueError(f"no linalg {fn}")
            for k, value in enumerate(outs):
                values[s["result"] + k] = value
            continue
        elif op == "gemm":
            def read(x, how):
                transpose, conjugate = how
                x = jnp.swapaxes(x, -1, -2) if transpose else x
                return jnp.conj(x) if conjugate else x

            alpha, beta = (complex(*step[k]) if step[k][1] != 0 else step[k][0]
                           for k in ("alpha", "beta"))
            out = alpha * jnp.matmul(read(xs[0], step["a"]), read(xs[1], step["b"]))
            if beta != 0:
                out = out + beta * xs[2]
        elif op == "diagonal":
            out = jnp.diagonal(xs[0], axis1=step["axes"][0], axis2=step["axes"][1])
        elif op == "permute":
            out = jnp.transpose(xs[0], step["perm"])
        elif op == "slice":
            x = xs[0]
            index = tuple(
                slice(start, min(stop, x.shape[axis]), step_)
                for axis, (start, stop, step_) in enumerate(step["axes"])
            )
            out = x[index]
        elif op == "reshape":
            out = jnp.reshape(xs[0], step["shape"])
        elif op == "eye":
            out = jnp.eye(step["rows"], step["cols"], dtype=DTYPES[step["dtype"]])
        elif op == "full":
            re, im = step["value"]
            target = DTYPES[step["dtype"]]
            out = jnp.full(step["shape"], complex(re, im) if "complex" in target else re, dtype=target)
        elif op == "cast":
            target = DTYPES[step["dtype"]]
            x = xs[0]
            out = (jnp.real(x) if jnp.iscomplexobj(x) and "complex" not in target else x).astype(target)
        else:
            raise ValueError(f"no step {op}")
        values[s["result"]] = out
    return values[program["outputs"][0]]


def main():
    try:
        import jax
        import jax.numpy as jnp
        import numpy as np
    except ImportError:
        print("skipped: jax is not available")
        return 0
    jax.config.update("jax_enable_x64", True)
    cases = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "target/gradients.json"))
    worst, failed = 0.0, 0
    for case in cases:
        inputs = [jnp.asarray(decode(np, t)) for t in case["inputs"]]
        program = case["program"]
        loss = lambda *args: run(jnp, program, args)
        want_loss = float(decode(np, case["loss"]))
        got_loss = float(loss(*inputs))
        grads = jax.grad(loss, argnums=tuple(range(len(inputs))))(*inputs)
        error = abs(got_loss - want_loss) / max(abs(want_loss), 1.0)
        for mine, theirs in zip(case["gradients"], grads):
            mine = decode(np, mine)
            theirs = np.conj(np.asarray(theirs))
            scale = max(float(np.max(np.abs(theirs))), 1.0)
            error = max(error, float(np.max(np.abs(mine - theirs))) / scale)
        ok = error <= 1e-9
        failed += not ok
        worst = max(worst, error)
        print(f"{'ok  ' if ok else 'FAIL'} {case['name']:<44} max relative error {error:.1e}")
    print(f"{len(cases) - failed} of {len(cases)} gradient cases equal JAX {jax.__version__}'s "
          f"(worst relative error {worst:.1e})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
