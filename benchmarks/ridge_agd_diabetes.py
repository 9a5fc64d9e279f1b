"""Bundled diabetes: DPRidge noisy_gd against noisy_agd, 20 seeds (issue 22); see benchmarks/results/ridge_agd_dense.md."""
import numpy as np, warnings, sys; warnings.simplefilter("ignore")
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from dp_sklearn import DPRidge
from dp_sklearn.solvers import _noisy_agd
X,y=load_diabetes(return_X_y=True); Xtr,Xte,ytr,yte=train_test_split(X,y,test_size=0.3,random_state=0)
sc=StandardScaler().fit(Xtr); Xtr,Xte=sc.transform(Xtr),sc.transform(Xte)
af = float(sys.argv[1]) if len(sys.argv) > 1 else None
if af is not None: _noisy_agd.SQUARED_AVERAGE_FROM = af
for eps in (0.5,1,2,5):
    r={}; T={}
    for s in ("noisy_gd","noisy_agd"):
        ms=[DPRidge(epsilon=eps,bounds_y=(0,400),random_state=k,solver=s).fit(Xtr,ytr) for k in range(20)]
        r[s]=np.array([m.score(Xte,yte) for m in ms]); T[s]=ms[0].n_iter_
    d=r["noisy_agd"]-r["noisy_gd"]
    print(eps, len(ytr), T, np.median(r["noisy_gd"]).round(3), np.median(r["noisy_agd"]).round(3), "diff", d.mean().round(3), "se", (d.std()/np.sqrt(20)).round(3), flush=True)
