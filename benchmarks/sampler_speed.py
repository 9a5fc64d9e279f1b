"""Paired speed A/B of the exact discrete Gaussian sampler: a base tree's ``_discrete.py`` against this tree's.

``python -m benchmarks.sampler_speed BASE_TREE [--sizes 62061,...] [--scales S,...] [--rounds R] [--out F]``

Both samplers run in this process (the base module loaded from ``BASE_TREE/dp_sklearn/_discrete.py``),
alternately and in alternating order, on generators with the same seed, so both see the same load;
the first rounds are a warm-up. Reports the median time of each and the median of the paired
ratios new / base, and checks that the outputs are equal (the same integers for the same
generator). ``--bump`` allocates and frees one large array first, as a fit on a large design
does: glibc then keeps freed blocks instead of returning them to the system, so the sampler's
temporaries do not page-fault on every call (without it the times include those faults).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import time

import numpy as np


def _load(tree):
    spec = importlib.util.spec_from_file_location("base_discrete", pathlib.Path(tree) / "dp_sklearn" / "_discrete.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.sampler_speed")
    ap.add_argument("base", help="source tree of the base (a checkout or `git archive` of it)")
    ap.add_argument("--sizes", default="1000,62061,1000000")
    ap.add_argument("--scales", default="1048577,1500000", help="s in grid steps (the package uses [2**20, 2**21])")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--bump", action="store_true", help="allocate and free 16 MB first (see the module docstring)")
    ap.add_argument("--out", default=None, help="append the markdown table to this file")
    args = ap.parse_args(argv)
    if args.bump:
        big = np.ones(2**21)  # 16 MB: glibc raises its thresholds for freed blocks up to 32 MB
        del big
    from dp_sklearn import _discrete as new

    old = _load(args.base)
    lines = [f"load average at start: {os.getloadavg()}; bump={args.bump}; rounds={args.rounds} after {args.warmup} warm-up",
             "", "| size | s | base ms | new ms | new / base (median of paired ratios) | outputs equal |",
             "|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for size in (int(v) for v in args.sizes.split(",")):
        for s in (int(v) for v in args.scales.split(",")):
            r_old, r_new = np.random.default_rng(size + s), np.random.default_rng(size + s)
            t_old, t_new, equal = [], [], True
            for r in range(args.warmup + args.rounds):
                pair = {}
                for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
                    t = time.perf_counter()
                    pair[side] = (old.discrete_gaussian(r_old, s, size) if side == "old"
                                  else new.discrete_gaussian(r_new, s, size))
                    pair[side + "_t"] = time.perf_counter() - t
                equal &= bool(np.array_equal(pair["old"], pair["new"]))
                if r >= args.warmup:
                    t_old.append(pair["old_t"])
                    t_new.append(pair["new_t"])
            t_old, t_new = np.array(t_old), np.array(t_new)
            line = (f"| {size} | {s} | {np.median(t_old) * 1e3:.3f} | {np.median(t_new) * 1e3:.3f} | "
                    f"{np.median(t_new / t_old):.3f} | {equal} |")
            lines.append(line)
            print(line, flush=True)
    tail = f"load average at end: {os.getloadavg()}"
    lines.append("")
    lines.append(tail)
    print(tail)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
