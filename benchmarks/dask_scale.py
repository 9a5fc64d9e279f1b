"""The default fit on a dask LocalCluster against the same fit in memory (issue 22, item 2).

Generates ``X`` (n x p float64) and ``y = X w + noise`` in blocks of ``--chunk`` rows from
per-block seeds, identically on the client (one in-memory array) and on the workers
(persisted there before any timing, so neither side pays for generating the data), then
fits each estimator's *default* (``DPRidge``, ``DPLasso``, ``DPLogisticRegression`` on
``y > 0``; public ``bounds_y`` and ``data_norm``, epsilon = 1, delta = 1e-9, the same
``random_state``) in memory and on the cluster, interleaved, ``--repeats`` times each
(after a small warm-up fit of each on both sides). Both run the same plan (the solver
``"auto"`` picks, T, the sampling rate), so the coefficients must agree to rounding.

Reported per estimator: the planned solver, T and sampling rate; the median wall time of
each side and their ratio; CPU seconds (the in-memory fit: this process; the dask fit:
this process, which also runs the scheduler, plus both worker processes, from psutil);
the largest coefficient difference (absolute and relative to the largest coefficient).
Also the load average before and after (the machine is shared: wall times are upper
bounds) and each worker's peak resident memory against its limit.

Run: ``python -m benchmarks.dask_scale --n 2000000`` (writes
``benchmarks/results/dask_scale.md``); default n = 2e7 (3.2 GB on each side).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "dask_scale.md"
MEMORY_WORDS = ("pausing", "spill", "memory limit", "restart", "terminat", "exceeded")
EPSILON, DELTA = 1.0, 1e-9


class _MemorySampler(threading.Thread):
    """Peak RSS of each worker process, sampled every ``period`` seconds."""

    def __init__(self, pids, period=0.2):
        super().__init__(daemon=True)
        import psutil

        self.procs = {addr: psutil.Process(pid) for addr, pid in pids.items()}
        self.peak = dict.fromkeys(pids, 0)
        self.period = period
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for addr, proc in self.procs.items():
                try:
                    self.peak[addr] = max(self.peak[addr], proc.memory_info().rss)
                except Exception:  # a worker that died shows up in the restart check
                    pass
            self.stop.wait(self.period)


def _block(k, rows, p, seed=0):
    """Block k of the data: (X_k, y_k) from the seed (seed, k), the same on the client and a worker."""
    rng = np.random.default_rng([seed, k])
    Xk = rng.standard_normal((rows, p))
    return Xk, Xk @ np.linspace(-1.0, 1.0, p) + rng.standard_normal(rows)


def _sizes(n, chunk):
    return [min(chunk, n - s) for s in range(0, n, chunk)]


def _in_memory_data(n, p, chunk):
    X, y = np.empty((n, p)), np.empty(n)
    start = 0
    for k, rows in enumerate(_sizes(n, chunk)):
        X[start:start + rows], y[start:start + rows] = _block(k, rows, p)
        start += rows
    return X, y


def _dask_data(client, n, p, chunk):
    import dask
    import dask.array as da
    from distributed import wait

    parts = [dask.delayed(_block, pure=True)(k, rows, p) for k, rows in enumerate(_sizes(n, chunk))]
    X = da.concatenate([da.from_delayed(part[0], (rows, p), dtype=np.float64)
                        for part, rows in zip(parts, _sizes(n, chunk))])
    y = da.concatenate([da.from_delayed(part[1], (rows,), dtype=np.float64)
                        for part, rows in zip(parts, _sizes(n, chunk))])
    X, y = client.persist([X, y])
    wait([X, y])
    return X, y


def _estimators(p):
    from dp_sklearn import DPLasso, DPLogisticRegression, DPRidge

    common = {"epsilon": EPSILON, "delta": DELTA, "data_norm": 2.0 * np.sqrt(p), "random_state": 0}
    return {
        "DPRidge": (lambda: DPRidge(bounds_y=(-15.0, 15.0), **common), False),
        "DPLasso": (lambda: DPLasso(bounds_y=(-15.0, 15.0), **common), False),
        "DPLogisticRegression": (lambda: DPLogisticRegression(**common), True),
        # not a default (yet): the few-pass plan a logistic default could take
        "DPLogisticRegression(solver='noisy_newton')": (lambda: DPLogisticRegression(solver="noisy_newton", **common),
                                                        True),
    }


def _worker_cpu(client):
    import psutil

    def cpu():
        t = psutil.Process().cpu_times()
        return t.user + t.system

    return sum(client.run(cpu).values())


def _timed(fit, client=None):
    """(wall s, CPU s, fitted estimator): CPU of this process, plus the workers' when ``client`` is given."""
    w0 = _worker_cpu(client) if client is not None else 0.0
    c0, t0 = time.process_time(), time.perf_counter()
    est = fit()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if client is not None:
        cpu += _worker_cpu(client) - w0
    return wall, cpu, est


def _plan(est):
    info = getattr(est, "dp_event_", None)
    text = repr(info)
    if "PoissonSampled" in text:
        q = text.split("sampling_probability=")[1].split(",")[0]
        return f"Poisson q = {float(q):.4g}"
    return "full batches"


def _memory_events(client):
    hits = []
    for addr, lines in client.get_worker_logs().items():
        for level, msg in lines:
            if level in ("WARNING", "ERROR", "CRITICAL") and any(w in msg.lower() for w in MEMORY_WORDS):
                hits.append(f"{addr}: {msg[:160]}")
    return hits


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000_000)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=500_000)
    parser.add_argument("--memory-limit", default="8GiB")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--estimators", default="DPRidge,DPLasso,DPLogisticRegression",
                        help="comma-separated; also DPLogisticRegression(solver='noisy_newton')")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)

    import dask
    from distributed import Client, LocalCluster

    warnings.simplefilter("ignore")
    load_before = os.getloadavg()
    dask.config.set({"distributed.worker.memory.monitor-interval": "100ms"})
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=args.memory_limit,
                           dashboard_address=None, silence_logs=50)
    client = Client(cluster)
    limit = {a: w["memory_limit"] for a, w in client.scheduler_info()["workers"].items()}
    sampler = _MemorySampler(client.run(os.getpid))
    sampler.start()

    n, p = args.n, args.p
    Xd, yd = _dask_data(client, n, p, args.chunk)
    X, y = _in_memory_data(n, p, args.chunk)
    warm_X, warm_y = _in_memory_data(20_000, p, 5_000)
    warm_Xd, warm_yd = _dask_data(client, 20_000, p, 5_000)
    rows = []
    for name in args.estimators.split(","):
        make, classify = _estimators(p)[name]
        t, td, tw, twd = (y > 0).astype(int) if classify else y, (yd > 0).astype(int) if classify else yd, \
            (warm_y > 0).astype(int) if classify else warm_y, (warm_yd > 0).astype(int) if classify else warm_yd
        make().fit(warm_X, tw), make().fit(warm_Xd, twd)  # imports and first calls, on both sides
        mem, dist = [], []
        for _ in range(args.repeats):  # interleaved
            mem.append(_timed(lambda: make().fit(X, t)))
            dist.append(_timed(lambda: make().fit(Xd, td), client))
        m_est, d_est = mem[-1][2], dist[-1][2]
        diff = float(np.max(np.abs(m_est.coef_ - d_est.coef_)))
        rel = diff / float(np.max(np.abs(m_est.coef_)))
        same_plan = (m_est.solver_ == d_est.solver_ and m_est.n_iter_ == d_est.n_iter_
                     and m_est.dp_event_ == d_est.dp_event_)
        wm, wd = statistics.median(r[0] for r in mem), statistics.median(r[0] for r in dist)
        cm, cd = statistics.median(r[1] for r in mem), statistics.median(r[1] for r in dist)
        rows.append((name, m_est.solver_, m_est.n_iter_, _plan(m_est), same_plan, wm, wd, wd / wm, cm, cd, cd / cm,
                     diff, rel))
        print(rows[-1], flush=True)
    load_after = os.getloadavg()

    sampler.stop.set()
    sampler.join()
    events = _memory_events(client)
    alive = set(client.scheduler_info()["workers"]) == set(limit)
    text = ["# The default fit on a dask LocalCluster against the same fit in memory", "",
            f"Command: `python -m benchmarks.dask_scale {' '.join(argv if argv is not None else sys.argv[1:])}`; "
            f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
            f"Data: {n:,} x {p} float64 ({n * p * 8 / 1e9:.2f} GB), {len(_sizes(n, args.chunk))} blocks of "
            f"{args.chunk:,} rows, the same values in memory and persisted on the workers. Cluster: "
            f"LocalCluster, 2 worker processes x 1 thread, memory_limit={args.memory_limit}; "
            f"epsilon = {EPSILON}, delta = {DELTA}, data_norm = 2 sqrt(p), bounds_y = (-15, 15) (regressors), "
            f"random_state = 0; medians of {args.repeats} interleaved fits after a warm-up fit of each.", "",
            f"Load average (1, 5, 15 min) before: {', '.join(f'{v:.1f}' for v in load_before)}; after: "
            f"{', '.join(f'{v:.1f}' for v in load_after)} on {os.cpu_count()} cores. The machine was shared, so "
            "wall times are upper bounds; CPU seconds are the in-memory process's, and for the dask fit the "
            "client's (which runs the scheduler) plus both workers'.", "",
            "| estimator (default unless a solver is named) | solver | T | plan | same plan | in-memory wall s | dask wall s | wall ratio "
            "| in-memory CPU s | dask CPU s | CPU ratio | max abs coef diff | relative |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        text.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.2f} | {r[6]:.2f} | {r[7]:.2f}x "
                    f"| {r[8]:.2f} | {r[9]:.2f} | {r[10]:.2f}x | {r[11]:.2e} | {r[12]:.2e} |")
    text += ["", "| worker | peak RSS |", "|---|---|"]
    for addr in sorted(limit):
        text.append(f"| {addr} | {sampler.peak[addr] / 2**30:.2f} GiB of {limit[addr] / 2**30:.2f} GiB "
                    f"({100 * sampler.peak[addr] / limit[addr]:.0f}%) |")
    text += ["", f"Memory-manager warnings (spill / pause / restart): {'; '.join(events) if events else 'none'}; "
                 f"workers alive at the end: {alive}."]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(text) + "\n")
    print("\n".join(text))
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
