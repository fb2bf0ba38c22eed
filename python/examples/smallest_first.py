"""Smallest job first: fewer GPUs go first (ties in submission order).

    gpusched sim run --ordering 'exec:python3 python/examples/smallest_first.py' ...

Its Go twin is in sim/policy/example_test.go (smallestFirst); the test
sim/policy/extproc TestPythonMatchesGo checks that both give the same run.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gpusched_policy import Ordering, serve  # noqa: E402


class SmallestFirst(Ordering):
    name = "smallest-first"

    def enqueued(self, now, jobs):
        return [-int(round(j["gpus"] * 1000)) for j in jobs]


if __name__ == "__main__":
    serve(SmallestFirst())
