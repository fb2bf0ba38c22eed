"""Gavel's heterogeneity-aware max-min allocation, in pure Python (no
numpy, no cvxpy): the allocator behind `--ordering gavel` served from
another process.

    gpusched sim run --ordering gavel --gpu-speeds gavel --job-types uniform \
        --gavel-allocator 'exec:python3 python/examples/gavel_maxmin.py' ...

Each round the simulator sends the live jobs grouped by (type, GPUs): for
each group its GPUs, its count of identical jobs and its throughput on
each GPU model. The reply is each group's share of time on each model,
X[k][m], maximising the smallest normalised throughput (a group's
throughput under X over its throughput with an equal share of every
model), as Gavel's max_min_fairness_perf policy does (Narayanan et al.,
OSDI'20, section 4.1): one linear program, solved here by a dense simplex
method with Bland's rule. The Go allocator (fairshare.HeteroMaxMin) adds a
second stage that spends capacity no minimum needs; this one, as Gavel's,
stops at the max-min.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gpusched_policy import Allocator, serve  # noqa: E402

EPS = 1e-9


def simplex_max(c, A, b):
    """Maximise c.x subject to A x <= b, x >= 0, for b >= 0 (the slack
    basis is feasible). Returns x. Dense tableau, Bland's rule."""
    rows, cols = len(A), len(c)
    # Tableau: rows of [A | I | b]; objective row [-c | 0 | 0].
    t = [list(A[i]) + [1.0 if j == i else 0.0 for j in range(rows)] + [float(b[i])] for i in range(rows)]
    z = [-float(v) for v in c] + [0.0] * rows + [0.0]
    basis = [cols + i for i in range(rows)]
    width = cols + rows
    while True:
        enter = next((j for j in range(width) if z[j] < -EPS), None)
        if enter is None:
            break
        leave, best = None, None
        for i in range(rows):
            a = t[i][enter]
            if a > EPS:
                ratio = t[i][-1] / a
                if best is None or ratio < best - EPS or (abs(ratio - best) <= EPS and basis[i] < basis[leave]):
                    leave, best = i, ratio
        if leave is None:
            raise ValueError("unbounded")
        piv = t[leave][enter]
        t[leave] = [v / piv for v in t[leave]]
        for i in range(rows):
            if i != leave and abs(t[i][enter]) > EPS:
                f = t[i][enter]
                t[i] = [v - f * w for v, w in zip(t[i], t[leave])]
        f = z[enter]
        z = [v - f * w for v, w in zip(z, t[leave])]
        basis[leave] = enter
    x = [0.0] * width
    for i, j in enumerate(basis):
        x[j] = t[i][-1]
    return x[:cols]


def max_min(models, gpus, jobs):
    """The max-min allocation: one row of time shares per job group."""
    nm = len(models)
    n = sum(max(j["count"], 1) for j in jobs)
    # Throughput that counts: 0 where the group does not fit the model.
    tp = [[j["throughput"][m] if j["gpus"] <= gpus[m] else 0.0 for m in range(nm)] for j in jobs]
    equal = []
    for k, j in enumerate(jobs):
        shares = [gpus[m] / (n * j["gpus"]) if tp[k][m] > 0 else 0.0 for m in range(nm)]
        scale = 1.0 / sum(shares) if sum(shares) > 1 else 1.0
        equal.append(sum(scale * s * tp[k][m] for m, s in enumerate(shares)))
    live = [k for k in range(len(jobs)) if equal[k] > 0]
    out = [[0.0] * nm for _ in jobs]
    if not live:
        return out
    # Variables: x[k][m] for live k, then t. Maximise t.
    nx = len(live) * nm
    c = [0.0] * nx + [1.0]
    A, b = [], []
    for i, k in enumerate(live):  # t - sum_m x tp / E <= 0
        row = [0.0] * (nx + 1)
        for m in range(nm):
            row[i * nm + m] = -tp[k][m] / equal[k]
        row[nx] = 1.0
        A.append(row)
        b.append(0.0)
    for m in range(nm):  # sum_k count gpus x <= GPUs of m
        row = [0.0] * (nx + 1)
        for i, k in enumerate(live):
            row[i * nm + m] = max(jobs[k]["count"], 1) * jobs[k]["gpus"]
        A.append(row)
        b.append(float(gpus[m]))
    for i, _ in enumerate(live):  # sum_m x <= 1
        row = [0.0] * (nx + 1)
        for m in range(nm):
            row[i * nm + m] = 1.0
        A.append(row)
        b.append(1.0)
    x = simplex_max(c, A, b)
    for i, k in enumerate(live):
        out[k] = [min(max(x[i * nm + m], 0.0), 1.0) if tp[k][m] > 0 else 0.0 for m in range(nm)]
    return out


class MaxMin(Allocator):
    name = "gavel-maxmin-python"

    def allocate(self, models, gpus, jobs):
        return max_min(models, gpus, jobs)


if __name__ == "__main__":
    serve(MaxMin())
