"""Tiresias' 2D-LAS (discretised two-dimensional least attained service),
preemptive, in Python: a job's attained service is its GPUs times its
running time over all its runs (`gpus` × `ran`); at each threshold (in
GPU-hours, the arguments, default 1 and 8) it drops one level, and a job
of a higher level goes first and may preempt one of a lower level in its
queue. Running jobs are re-ranked every cycle in which some job waits.

    gpusched sim run --ordering 'exec:python3 python/examples/las.py 1 8' --preempt=queue ...

The built-in is --ordering las:1,8 (queue.LAS, which also runs a cycle at
the moment a running job crosses a threshold; this process sees it at the
next cycle). sim/policy/extproc TestPythonLAS runs it through the real
python3.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gpusched_policy import Ordering, serve  # noqa: E402


class LAS(Ordering):
    name = "las-python"
    wants_running = True

    def __init__(self, thresholds_gpu_hours):
        self.thresholds = sorted(h * 3600.0 for h in thresholds_gpu_hours)

    def level(self, job):
        service = job["gpus"] * job["ran"]
        return sum(1 for t in self.thresholds if service >= t)

    def priority(self, job):
        return job["priority"] - self.level(job)

    def enqueued(self, now, jobs):
        return [self.priority(j) for j in jobs]

    def running(self, now, jobs):
        return [self.priority(j) for j in jobs]


if __name__ == "__main__":
    serve(LAS([float(a) for a in sys.argv[1:]] or [1.0, 8.0]))
