"""HEADLINE.md: the few numbers worth copying into the top-level README.

Built from the JSON summaries the sections leave in the results directory, so it is
complete after a full run and partial (but consistent) after ``--only``.
"""

from __future__ import annotations

import datetime
import json

import numpy as np

from .common import WARNINGS_NOTE, fmt, md_table


def _load(ctx, name):
    path = ctx.results_dir / f"{name}.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except Exception:  # noqa: BLE001
        return None


def _best(rows, idx, higher=True):
    best = None
    for label, r in rows.items():
        means = r.get("means") or []
        if idx < len(means) and means[idx] is not None and np.isfinite(means[idx]):
            if best is None or (means[idx] > best[1] if higher else means[idx] < best[1]):
                best = (label, means[idx])
    return best


def _short(label):
    return (label.replace("DPLogisticRegression", "DPLogReg").replace("penalty=", "").replace("solver=", "")
            .replace("fully private: DPStandardScaler(documented bounds)", "DPStandardScaler").replace("'", ""))


def write_headline(ctx, timings, total):
    mode = "quick" if ctx.quick else "full"
    from .datasets import display_path

    out = ["# dp_sklearn benchmark headline", "",
           f"Updated {datetime.date.today().isoformat()} ({mode} mode); details in `{display_path(ctx.results_dir)}/` "
           "(utility.md, wang_gu.md, paper_tables.md, ttz_rate.md, speed.md, accounting.md); the command that "
           f"produced each section is listed at the end. {WARNINGS_NOTE}", ""]
    util = _load(ctx, "utility")
    if util:
        eps = util[0]["eps"]
        i1 = eps.index(1.0) if 1.0 in eps else len(eps) // 2
        i10 = eps.index(10.0) if 10.0 in eps else len(eps) - 1
        rows = []
        for d in util:
            bases = d.get("baselines", {})
            sk = [v for k, v in bases.items() if k.startswith("sklearn") and v is not None]
            triv = [v for k, v in bases.items() if k.startswith("trivial") and v is not None]
            private = d.get("private_rows") or {}
            variants = [(d["dataset"] + ", fully private pipeline (raw features, ε total)", private)] if private else []
            variants.append((d["dataset"] + (", comparison: NON-private StandardScaler" if private else ""), d["rows"]))
            for title, cand in variants:
                b1, b10 = _best(cand, i1), _best(cand, i10)
                rows.append([title, d["n"], d["p"], d["metric"],
                             f"{fmt(b1[1])} ({_short(b1[0])})" if b1 else "n/a",
                             f"{fmt(b10[1])} ({_short(b10[0])})" if b10 else "n/a",
                             fmt(max(sk)) if sk else "n/a", fmt(triv[0]) if triv else "n/a"])
        out += ["## Privacy-utility on real data (best DP solver, mean over seeds; delta = 1e-5)", "",
                f"Seeds per cell: {util[0]['seeds']}; epsilons run: {eps}. Test-split metric; the best of all "
                "estimator x solver rows is shown with its name (no tuning on the test split beyond this max). "
                "For diabetes and breast_cancer the fully private pipeline (DPStandardScaler with documented public "
                "ranges + the model, one total ε) is the result; the rows fitted after a NON-private StandardScaler "
                "are a labelled comparison.", "",
                md_table(["dataset", "n", "p", "metric", f"DP best, ε={eps[i1]:g}", f"DP best, ε={eps[i10]:g}",
                          "sklearn non-private (best)", "trivial"], rows), ""]
    wg = _load(ctx, "wang_gu")
    if wg and wg.get("settings"):
        rows = []
        for key, meth in wg["settings"].items():
            row = [key]
            for m in ("IGHT (non-private)", "DP-IGHT", "Two stage", "Frank-Wolfe"):
                v = meth.get(m)
                row.append(fmt(v[-1]) if v and v[-1] is not None else "n/a")
            rows.append(row)
        out += ["## Wang & Gu (IJCAI 2019) synthetic: relative error ||θ - θ*|| / ||θ*|| at the largest ε run "
                "(ε = 10, δ = 0.01)", "",
                md_table(["setting", "IGHT (non-private)", "DP-IGHT", "Two stage", "Frank-Wolfe"], rows), ""]
    ttz = _load(ctx, "ttz_rate")
    if ttz and ttz.get("slopes"):
        ns = ttz["slopes_nonsaturated"] if "slopes_nonsaturated" in ttz else {}
        rows = [[s, f"{v:.2f}", f"{ns[s][0]:.2f} (n = {ns[s][1]}..{ns[s][2]})" if s in ns else "n/a"]
                for s, v in ttz["slopes"].items()]
        out += [f"## TTZ rate: excess empirical risk vs n (p = {ttz['p']}, ε = {ttz['eps']:g}, δ = {ttz['delta']:g}, "
                f"{ttz['seeds']} seeds, n = {ttz['ns'][0]}..{ttz['ns'][-1]})", "",
                "Theory for private Frank-Wolfe: slope -2/3 (up to log factors).", "",
                md_table(["solver", "log-log slope (all n)", "slope where excess risk < half the trivial"], rows), ""]
    sp = _load(ctx, "speed")
    if sp:
        labels = [k for k in sp if k.startswith("dense") and sp[k].get("fit_measured", True)]
        pick = [lab for lab in (labels[-1:] + (["news20"] if "news20" in sp else []))]
        rows = []
        keys = []
        for lab in pick:
            for k in sp[lab]["dp"]:
                if k not in keys:
                    keys.append(k)
        for k in keys:
            row = [_short(k)]
            for lab in pick:
                r = sp[lab]["dp"].get(k, {})
                skt = sp[lab]["sk"].get(r.get("family"), {}).get("time")
                row.append(f"{r['time'] / skt:.2f}×" if r.get("time") and skt else "n/a")
            rows.append(row)
        out += ["## Speed: DP fit time ÷ scikit-learn counterpart fit time (median; one BLAS thread)", "",
                md_table(["DP estimator (solver)"] + pick, rows), ""]
    acc = _load(ctx, "accounting")
    if acc:
        rows = []
        for ds, recs in acc.items():
            by = {}
            for r in recs:
                by.setdefault(r["label"], []).append(r)
            for lab, rs in by.items():
                r1 = next((r for r in rs if r["eps"] == 1.0), rs[len(rs) // 2])
                rows.append([ds, _short(lab), f"{r1['eps']:g}",
                             f"{fmt(r1['noise_ratio'], 2)}×" if r1["noise_ratio"] else "n/a",
                             fmt(r1["eps_spent_paper"], 3) if r1["eps_spent_paper"] is not None else "n/a",
                             fmt(r1["tight"]), fmt(r1["paper"])])
        out += ["## Tight vs paper accounting (same ε, δ = 1e-5)", "",
                "Regressors also spend 10 % of ε on a private mean of y (Laplace), included in the spent ε.", "",
                md_table(["dataset", "solver", "ε", "paper noise ÷ tight noise", "ε the paper calibration actually spends",
                          "utility: tight", "utility: paper"], rows), ""]
    cmds = _load(ctx, "commands") or {}
    if cmds:
        out += ["## Provenance", "", md_table(["section", "command", "wall time", "finished"],
                                               [[k, f"`{v['command']}`", f"{v['wall_s']:.0f} s", v["finished"]]
                                                for k, v in cmds.items()]), ""]
    text = "\n".join(out)
    (ctx.results_dir / "HEADLINE.md").write_text(text)
    print(f"  wrote {ctx.results_dir / 'HEADLINE.md'}", flush=True)
    # benchmarks/results/HEADLINE.md is the file the top-level README copies: a quick run fills
    # it only while no full run has written it (the text says which mode produced it).
    from .common import RESULTS_DIR

    top = RESULTS_DIR / "HEADLINE.md"
    if ctx.quick and ctx.results_dir.resolve() == (RESULTS_DIR / "quick").resolve():
        if not top.exists() or "(quick mode)" in top.read_text():
            top.write_text(text)
            print(f"  wrote {top} (quick-mode numbers; a full run replaces them)", flush=True)
