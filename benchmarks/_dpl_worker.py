"""Timing worker for IBM diffprivlib, run by ``benchmarks/speed.py`` in diffprivlib's own environment.

Run as ``<venv>/bin/python benchmarks/_dpl_worker.py``; it imports neither dp_sklearn nor
the benchmarks package (diffprivlib needs scikit-learn < 1.6). Protocol, one JSON object per
line on stdin and stdout:

* ``{"load": path}`` loads an ``.npz`` with ``X`` (dense) or ``data``/``indices``/``indptr``/
  ``shape`` (CSR), ``y_reg`` and ``y_bin``; answers ``{"ok": true}``;
* ``{"fit": name, "epsilon": e}`` fits diffprivlib's ``name`` (``"LinearRegression"`` or
  ``"LogisticRegression"``) once on the loaded data, with public bounds given (so no bound is
  estimated from the data) and one BLAS thread; answers ``{"time": seconds}`` or
  ``{"error": message}``.
"""

import json
import sys
import time
import warnings


def main():
    import numpy as np
    import scipy.sparse as sp
    from threadpoolctl import threadpool_limits

    import diffprivlib
    from diffprivlib.models import LinearRegression, LogisticRegression

    data = {}
    print(json.dumps({"version": diffprivlib.__version__}), flush=True)
    with threadpool_limits(1):
        for line in sys.stdin:
            cmd = json.loads(line)
            try:
                if "load" in cmd:
                    z = np.load(cmd["load"], allow_pickle=False)
                    if "X" in z:
                        X = z["X"]
                    else:
                        X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
                    data = {"X": X, "y_reg": z["y_reg"], "y_bin": z["y_bin"]}
                    out = {"ok": True}
                else:
                    X, eps = data["X"], float(cmd["epsilon"])
                    bound = float(cmd.get("x_bound", 4.0))
                    if cmd["fit"] == "LinearRegression":
                        p = X.shape[1]
                        est = LinearRegression(epsilon=eps, bounds_X=(np.full(p, -bound), np.full(p, bound)),
                                               bounds_y=tuple(cmd.get("bounds_y", (-4.0, 4.0))), random_state=0)
                        y = data["y_reg"]
                    else:
                        est = LogisticRegression(epsilon=eps, data_norm=float(cmd.get("data_norm", 1.0)),
                                                 random_state=0)
                        y = data["y_bin"]
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t0 = time.perf_counter()
                        est.fit(X, y)
                        out = {"time": time.perf_counter() - t0}
            except Exception as exc:  # noqa: BLE001 -- reported to the harness as a table note
                out = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
