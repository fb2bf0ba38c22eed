"""Shortest remaining time first, preemptive, in Python: the same
priorities as the simulator's built-in srtf (rootsched.SRTF): minus the
remaining minutes, the trace's priority first; running jobs re-ranked
every cycle.

    gpusched sim run --ordering 'exec:python3 python/examples/srtf.py' --preempt ...
"""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gpusched_policy import Ordering, remaining, serve  # noqa: E402

SPAN = 1 << 22


def srtf(job):
    left = remaining(job)
    minutes = SPAN - 1 if left is None else min(math.ceil(left / 60.0), SPAN - 1)
    base = max(min(job["priority"], 255), -256)
    return base * SPAN - minutes


class SRTF(Ordering):
    name = "srtf-python"
    wants_running = True

    def enqueued(self, now, jobs):
        return [srtf(j) for j in jobs]

    def running(self, now, jobs):
        return [srtf(j) for j in jobs]


if __name__ == "__main__":
    serve(SRTF())
