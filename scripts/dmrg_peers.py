#!/usr/bin/env python3
"""The peers' side of `examples/dmrg.rs`: the same two-site DMRG of the
spin-1/2 Heisenberg chain (open ends, from the Neel state, chi_max and the
number of sweeps given, SVD cutoff 1e-14, no mixer, no symmetry) with TeNPy
and quimb, one thread each, printing each sweep's time and energy, then the
median time per sweep of the last half of the sweeps (the first ones grow
the bonds).

    python3 scripts/dmrg_peers.py [L] [CHI] [SWEEPS] [--weft MS]

With `--weft MS` (weft's median ms per sweep of the same run, as
`scripts/dmrg_compare.sh` passes it) each peer's line ends with its time
over weft's. A peer that cannot be imported is reported as
`skipped: <reason>`. Lanczos: TeNPy's LanczosGroundState with N_min 2,
N_max 20 and E_tol 1e-13, as the Rust example stops; quimb uses its own
eigensolver (its default), so its iteration counts are its own.
"""

import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[var] = "1"
for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(var, None)

import argparse
import statistics
import time
import warnings

EXACT_16 = -6.91173714557463


def tenpy_run(sites, chi, sweeps):
    import logging

    logging.disable(logging.WARNING)
    from tenpy.algorithms import dmrg
    from tenpy.models.spins import SpinChain
    from tenpy.networks.mps import MPS

    model = SpinChain({"L": sites, "S": 0.5, "Jx": 1.0, "Jy": 1.0, "Jz": 1.0,
                       "bc_MPS": "finite", "conserve": None})
    psi = MPS.from_product_state(model.lat.mps_sites(), ["up", "down"] * (sites // 2),
                                 bc="finite")
    engine = dmrg.TwoSiteDMRGEngine(psi, model, {
        "mixer": None,
        "trunc_params": {"chi_max": chi, "svd_min": 1e-14},
        "lanczos_params": {"N_min": 2, "N_max": 20, "E_tol": 1e-13},
        "max_sweeps": sweeps,
    })
    times, energies = [], []
    for _ in range(sweeps):
        start = time.perf_counter()
        engine.sweep()
        times.append(time.perf_counter() - start)
        energies.append(model.H_MPO.expectation_value(psi))
    return times, energies


def quimb_run(sites, chi, sweeps):
    import quimb.tensor as qtn

    ham = qtn.MPO_ham_heis(sites, j=1.0)
    neel = qtn.MPS_computational_state("01" * (sites // 2))
    engine = qtn.DMRG2(ham, bond_dims=[chi], cutoffs=1e-14, p0=neel)
    times, energies = [], []
    for _ in range(sweeps):
        # A sweep is there and back, as the others' are.
        start = time.perf_counter()
        engine.sweep("R", canonize=True)
        energy = engine.sweep("L", canonize=False)
        times.append(time.perf_counter() - start)
        energies.append(float(energy))
    return times, energies


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("numbers", nargs="*", type=int)
    parser.add_argument("--weft", type=float, help="weft's median ms per sweep")
    args = parser.parse_args()
    sites, chi, sweeps = (args.numbers + [16, 64, 6][len(args.numbers):])[:3]
    print(f"peers: two-site DMRG, Heisenberg chain of {sites} sites, chi <= {chi}, "
          f"{sweeps} sweeps, one thread")
    for name, run in (("TeNPy", tenpy_run), ("quimb", quimb_run)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                times, energies = run(sites, chi, sweeps)
        except ImportError as e:
            print(f"{name}: skipped: {e}")
            continue
        for k, (t, e) in enumerate(zip(times, energies), 1):
            print(f"  {name} sweep {k}: E = {e:.12f}  {t * 1e3:.1f} ms")
        # The first sweeps grow the bonds: the median of the last half.
        median = statistics.median(times[len(times) // 2:]) * 1e3
        line = f"{name}: {median:.1f} ms per sweep (median of the last half), E = {energies[-1]:.12f}"
        if sites == 16:
            line += f", |dE| = {abs(energies[-1] - EXACT_16):.1e}"
        if args.weft:
            line += f"; {median / args.weft:.2f}x weft's time"
        print(line)


if __name__ == "__main__":
    main()
