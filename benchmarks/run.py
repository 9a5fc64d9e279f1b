"""One command for every benchmark: ``python -m benchmarks.run [--quick] [--data-dir DIR] [--only NAME]``.

Sections (``--only`` takes one name, or a comma-separated list):

* ``utility``       -- privacy-utility curves on the real datasets (Section 1)
* ``wang_gu``       -- Wang & Gu (IJCAI 2019) synthetic sparse linear / logistic, Figure 1 (Section 2a)
* ``paper_tables``  -- Wang & Gu Tables 2 and 3 on E2006-tfidf / RCV1 when present (Section 2b)
* ``ttz_rate``      -- TTZ excess-risk rate of private Frank-Wolfe vs n (Section 2c)
* ``speed``         -- fit-time ratios, peak memory, per-iteration cost vs scikit-learn (Section 3)
* ``accounting``    -- tight vs paper accounting: noise scale and utility (Section 4)

Results (Markdown + PNG) go to ``benchmarks/results/`` (full run) or
``benchmarks/results/quick/`` (``--quick``), plus ``HEADLINE.md``.
"""

from __future__ import annotations

import os

# One BLAS thread per process (before numpy is imported): seeds run in parallel over
# --n-jobs processes instead, and single-threaded timings are stable on a shared machine.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse
import sys
import time
from pathlib import Path

from . import datasets as D
from .common import RESULTS_DIR, Context, command_string, setup_warnings

SECTIONS = ["utility", "wang_gu", "paper_tables", "ttz_rate", "speed", "accounting"]


def run_section(ctx, name, args):
    if name == "utility":
        from . import utility

        ds = args.datasets.split(",") if args.datasets else None
        return utility.run(ctx, only_datasets=ds)
    if name == "wang_gu":
        from . import papers

        return papers.run_wang_gu(ctx)
    if name == "paper_tables":
        from . import papers

        return papers.run_paper_tables(ctx)
    if name == "ttz_rate":
        from . import papers

        return papers.run_ttz_rate(ctx)
    if name == "speed":
        from . import speed

        return speed.run(ctx)
    if name == "accounting":
        from . import accounting

        return accounting.run(ctx)
    raise ValueError(f"unknown section {name!r}; choose from {SECTIONS}")


def _record(ctx, section, seconds):
    """commands.json: which command last produced each section, when, and how long it took."""
    import datetime
    import json

    path = ctx.results_dir / "commands.json"
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
    except Exception:  # noqa: BLE001
        data = {}
    data[section] = {"command": ctx.command, "wall_s": round(seconds, 1),
                     "finished": datetime.datetime.now().isoformat(timespec="seconds")}
    path.write_text(json.dumps(data, indent=1))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="reduced grid (fewer epsilons / seeds / rows, stated in every table); < 10 min on 2 cores")
    parser.add_argument("--data-dir", default=None,
                        help="directory of the real datasets (default: $DP_SKLEARN_DATA or ../shared/data "
                             "relative to the repo root); missing files are skipped with a note")
    parser.add_argument("--only", default=None, help=f"run only these sections (comma-separated): {SECTIONS}")
    parser.add_argument("--datasets", default=None,
                        help=f"utility section: only these datasets (comma-separated): {list(D.REAL_DATASETS)}")
    parser.add_argument("--n-jobs", type=int, default=2, help="joblib workers for seeds (default 2)")
    parser.add_argument("--results-dir", default=None, help="override the output directory")
    args = parser.parse_args(argv)

    setup_warnings()
    data_dir = Path(args.data_dir) if args.data_dir else D.default_data_dir()
    if args.results_dir:
        results_dir = Path(args.results_dir)
    else:
        results_dir = RESULTS_DIR / "quick" if args.quick else RESULTS_DIR
    results_dir.mkdir(parents=True, exist_ok=True)
    ctx = Context(quick=args.quick, data_dir=data_dir, n_jobs=args.n_jobs,
                  command=command_string(sys.argv[1:] if argv is None else argv), results_dir=results_dir)
    sections = SECTIONS if not args.only else [s.strip() for s in args.only.split(",") if s.strip()]
    for s in sections:
        if s not in SECTIONS:
            parser.error(f"unknown section {s!r}; choose from {SECTIONS}")

    print(f"dp_sklearn benchmarks ({'quick' if args.quick else 'full'}): data dir {data_dir} "
          f"({'present' if data_dir.is_dir() else 'ABSENT'}), results -> {results_dir}", flush=True)
    t_all = time.perf_counter()
    timings = {}
    for s in sections:
        print(f"\n=== {s} ===", flush=True)
        t0 = time.perf_counter()
        try:
            run_section(ctx, s, args)
        except Exception as e:  # noqa: BLE001  (one broken section must not stop the others)
            import traceback

            traceback.print_exc()
            ctx.note(f"section {s} failed: {type(e).__name__}: {e}")
        timings[s] = time.perf_counter() - t0
        _record(ctx, s, timings[s])
        print(f"=== {s}: {timings[s]:.1f} s ===", flush=True)
    total = time.perf_counter() - t_all

    from .headline import write_headline

    write_headline(ctx, timings, total)
    print(f"\nTotal wall time: {total:.1f} s  ({', '.join(f'{k} {v:.0f}s' for k, v in timings.items())})")
    if ctx.notes:
        print("Notes:")
        for n in ctx.notes:
            print(f"  - {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
