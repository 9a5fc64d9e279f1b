"""A private fit on data larger than one worker, on a dask LocalCluster (issue 11, item 5).

Generates ``X`` (n x p float64, default 2e7 x 20 = 3.2 GB) and ``y = X w + noise``
blockwise on the workers (never on the client; every pass over the data regenerates
the blocks from their seeds), then fits

* ``DPLasso`` (``frank_wolfe``, the default): the Gram path, one pass over X for
  ``X^T X`` and ``X^T y`` on the cluster, then T cheap steps on the client;
* ``DPRidge`` (``noisy_gd``, the default, with a clip norm that binds): the normalized
  design is persisted on the workers and every step is one blockwise pass
  (clipped gradient sum per block, p-vectors to the client).

Both use public bounds (``bounds_y``, ``data_norm``), so no n-sized vector reaches the
client. The cluster is 2 worker processes x 1 thread with a memory limit each
(``--memory-limit``, default 4 GiB); a background thread samples each worker process's
resident memory (psutil) every 0.2 s, and the worker logs are scanned for the memory
manager's spill / pause / restart messages. Reported: wall time of each fit (and of
its passes), T, the peak RSS of each worker against its limit, the bytes spilled to
disk, and the client's own peak RSS.

First, the default ``DPRidge()`` and ``DPLogisticRegression()`` (labels ``y > 0``) on the
cluster and on the same data in memory (computed to the client; ``--no-in-memory`` skips
that): wall-time ratio and the largest coefficient difference for the same ``random_state``
(issue 22: the distributed engine on the in-memory plan). ``--defaults-only`` stops there;
``--persist`` holds X and y in the workers' memory first (else every pass regenerates them).

Run: ``python -m benchmarks.dask_scale`` (writes ``benchmarks/results/dask_scale.md``);
``--n 2000000`` for a quick check; ``--ridge-iter`` sets T of the noisy GD fit
(default 100: each step is a full pass over the 3.4 GB design).
"""

from __future__ import annotations

import argparse
import os
import resource
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


def _data(n, p, chunk, seed=0):
    import dask.array as da

    rs = da.random.RandomState(seed)
    X = rs.standard_normal((n, p), chunks=(chunk, p))
    w = np.linspace(-1.0, 1.0, p)
    y = X @ w + rs.standard_normal(n, chunks=chunk)
    return X, y


def _fit(est, X, y):
    t0 = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t0


def _default_fits(X, y, common, in_memory):
    """Default ``DPRidge`` and ``DPLogisticRegression`` (``solver="auto"``) on the cluster and, on the
    same data computed to the client, in memory (one BLAS thread): wall times, their ratio, passes,
    and the largest coefficient difference for the same ``random_state``. Both sides are warmed up
    first by a fit on the first 50,000 rows (a cold cluster's first fit also imports the library on
    every worker)."""
    from dp_sklearn import DPLogisticRegression, DPRidge

    yb = (y > 0).astype(np.int64)
    fits = (("DPRidge()", lambda: DPRidge(**common), y),
            ("DPLogisticRegression()", lambda: DPLogisticRegression(
                **{k: v for k, v in common.items() if k != "bounds_y"}), yb))
    local = (X.compute(), y.compute(), yb.compute()) if in_memory else None
    rows = []
    for name, make, target in fits:  # warm-up: imports on the workers and the client, first tasks
        make().fit(X[:50_000], target[:50_000])
        if local is not None:
            make().fit(local[0][:50_000], (local[1] if target is y else local[2])[:50_000])
    for name, make, target in fits:
        est = make()
        t_dask = _fit(est, X, target)
        cell = f"{t_dask:.1f} s wall on the cluster, solver {est.solver_}, T = {est.n_iter_}"
        if local is not None:
            ref = make()
            t_mem = _fit(ref, local[0], local[1] if target is y else local[2])
            diff = float(np.max(np.abs(np.r_[est.coef_.ravel(), est.intercept_] - np.r_[ref.coef_.ravel(),
                                                                                       ref.intercept_])))
            cell += (f"; in memory {t_mem:.1f} s (solver {ref.solver_}, T = {ref.n_iter_}): dask / in-memory = "
                     f"{t_dask / t_mem:.2f}x; max |coef difference| = {diff:.1e}")
        rows.append((f"{name} default, dask vs in-memory", cell))
    return rows


def _memory_events(client):
    logs = client.get_worker_logs()
    hits = []
    for addr, lines in logs.items():
        for level, msg in lines:
            if level in ("WARNING", "ERROR", "CRITICAL") and any(w in msg.lower() for w in MEMORY_WORDS):
                hits.append(f"{addr}: {msg[:160]}")
    return hits


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000_000)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=500_000)
    parser.add_argument("--memory-limit", default="4GiB")
    parser.add_argument("--ridge-iter", type=int, default=100)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--defaults-only", action="store_true",
                        help="only the default DPRidge / DPLogisticRegression fits against in-memory fits")
    parser.add_argument("--persist", action="store_true",
                        help="persist X and y on the workers first (the data already in the cluster's memory); "
                             "otherwise every pass regenerates the blocks")
    parser.add_argument("--no-in-memory", action="store_true",
                        help="skip the in-memory fits (when X does not fit in the client's memory)")
    args = parser.parse_args(argv)

    import dask
    from distributed import Client, LocalCluster

    from dp_sklearn import DPLasso, DPRidge

    warnings.simplefilter("ignore")
    dask.config.set({"distributed.worker.memory.monitor-interval": "100ms"})
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=args.memory_limit,
                           dashboard_address=None)
    client = Client(cluster)
    limit = {a: w["memory_limit"] for a, w in client.scheduler_info()["workers"].items()}
    pids = client.run(os.getpid)
    sampler = _MemorySampler(pids)
    sampler.start()

    n, p = args.n, args.p
    X, y = _data(n, p, args.chunk)
    if args.persist:
        import distributed

        X, y = client.persist([X, y])
        distributed.wait([X, y])
    common = {"epsilon": 1.0, "delta": 1e-9, "bounds_y": (-15.0, 15.0), "data_norm": 2.0 * np.sqrt(p),
              "random_state": 0}
    default_rows = _default_fits(X, y, common, not args.no_in_memory)
    if not args.defaults_only:
        lasso = DPLasso(radius=1.0, **common)
        t_lasso = _fit(lasso, X, y)
        ridge = DPRidge(max_iter=args.ridge_iter, **common)
        t_ridge = _fit(ridge, X, y)

    sampler.stop.set()
    sampler.join()
    spilled = client.run(lambda dask_worker: getattr(dask_worker.data, "spilled_total", None)
                         if hasattr(dask_worker, "data") else None)
    spilled = {a: (getattr(s, "disk", None) if s is not None else None) for a, s in spilled.items()}
    events = _memory_events(client)
    alive = set(client.scheduler_info()["workers"]) == set(limit)
    client_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rows = [
        ("data", f"{n:,} x {p} float64 = {n * p * 8 / 1e9:.2f} GB, {-(-n // args.chunk)} chunks of "
                 f"{args.chunk:,} rows, generated blockwise on the workers"),
        ("cluster", f"LocalCluster, 2 worker processes x 1 thread, memory_limit={args.memory_limit} each"),
    ] + default_rows
    if not args.defaults_only:
        rows += [
            ("DPLasso (frank_wolfe, Gram path)", f"{t_lasso:.1f} s wall, T = {lasso.n_iter_} steps"),
            ("DPRidge (noisy_gd, blockwise clipped sums)", f"{t_ridge:.1f} s wall, T = {ridge.n_iter_} steps "
                                                          f"({t_ridge / ridge.n_iter_:.2f} s per step incl. the persist)"),
        ]
    for addr in sorted(limit):
        rows.append((f"worker {addr} peak RSS", f"{sampler.peak[addr] / 2**30:.2f} GiB of "
                                               f"{limit[addr] / 2**30:.2f} GiB limit "
                                               f"({100 * sampler.peak[addr] / limit[addr]:.0f}%), "
                                               f"spilled to disk: {spilled.get(addr)} bytes"))
    rows += [
        ("memory-manager warnings (spill / pause / restart)", "; ".join(events) if events else "none"),
        ("workers alive at the end (no restart)", str(alive)),
        ("client peak RSS", f"{client_rss / 2**30:.2f} GiB"),
    ]
    text = ["# Distributed engine at scale (dask LocalCluster)", "",
            f"Command: `python -m benchmarks.dask_scale {' '.join(argv if argv is not None else sys.argv[1:])}`",
            f"(epsilon = 1, delta = 1e-9, public bounds_y = (-15, 15), data_norm = 2 sqrt(p)); "
            f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. The machine (2 cores) was shared "
            "with other jobs, so wall times are upper bounds.", "",
            "| quantity | value |", "|---|---|"]
    text += [f"| {k} | {v} |" for k, v in rows]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(text) + "\n")
    print("\n".join(text))
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
