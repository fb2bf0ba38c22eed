"""Worst fit: each task on the candidate host with the most free GPUs
(ties to the first candidate, the lowest host), spreading load.

    gpusched sim run --policy 'exec:python3 python/examples/worst_fit.py' ...
    gpusched sim compare --policies 'best-fit,exec:python3 python/examples/worst_fit.py' ...

The simulator's gang placer keeps each job's constraints (all tasks or
none, its domain levels) and asks this process for one task's host at a
time (docs/policy-protocol.md). sim/policy/extproc TestPythonNodePicker
runs it through the real python3.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gpusched_policy import NodePicker, serve  # noqa: E402


class WorstFit(NodePicker):
    name = "worst-fit-python"

    def pick(self, gpus, milli, hosts):
        best = None
        for h in hosts:
            if best is None or h["free"] > best["free"]:
                best = h
        return best["host"] if best else ""


if __name__ == "__main__":
    serve(WorstFit())
