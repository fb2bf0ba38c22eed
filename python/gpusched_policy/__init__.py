"""Write a gpusched simulator job ordering in Python.

The simulator runs your policy as a process and talks to it in JSON lines
on standard input and output (docs/policy-protocol.md):

    gpusched sim run --ordering 'exec:python3 my_policy.py' ...
    gpusched sim compare --orderings 'fifo,srtf,exec:python3 my_policy.py' ...

A policy subclasses Ordering, sets `name`, implements `enqueued` (and, for
priorities that change as jobs run, `running` with `wants_running = True`)
and calls `serve(MyPolicy())`. Each job is a dict:

    id, queue   str
    gpus        float   GPUs asked for
    priority    int     the priority it was submitted with
    submit      float   arrival, seconds since the trace start
    runtime     float   runtime estimate in seconds (0: none)
    ran         float   running time over all its runs (attained service)
    done        float   work kept: checkpointed work plus the current run
    running     bool

Return one int priority per job, in order: higher goes first in its queue
and, with preemption, may preempt a lower one. Priorities must fit in a
signed 32-bit integer. Print nothing else on standard output (log to
standard error: the simulator shows its tail when the process fails).

An Allocator (subclass it, implement `allocate`, serve it the same way)
computes the per-GPU-model allocation of --ordering gavel instead:
--gavel-allocator 'exec:python3 my_allocator.py'
(python/examples/gavel_maxmin.py).

A NodePicker (subclass it, implement `pick`) places tasks instead:
--policy 'exec:python3 my_picker.py' (python/examples/worst_fit.py).

Standard library only; no third-party package is needed.
"""

import json
import sys

PROTOCOL = 1

__all__ = ["Ordering", "Allocator", "NodePicker", "serve", "remaining", "PROTOCOL"]


def remaining(job):
    """The job's remaining time by its estimate (runtime - done, at least
    1 s), or None when it has no estimate."""
    if job["runtime"] <= 0:
        return None
    return max(job["runtime"] - job["done"], 1.0)


class Ordering:
    """Base class of a job ordering served to the simulator."""

    name = "python-ordering"
    wants_running = False

    def hello(self, arg, seed):
        """Called once before any job: arg is what followed the command in
        the flag (exec:CMD ... has none; registered wrappers may pass one),
        seed the run's seed."""

    def enqueued(self, now, jobs):
        """Priorities of the jobs that entered a queue (submitted, or
        requeued after a stop) since the last scheduling cycle."""
        raise NotImplementedError

    def running(self, now, jobs):
        """Priorities of every running job, once per cycle (only when
        wants_running is True)."""
        raise NotImplementedError


class Allocator:
    """Base class of a per-GPU-model allocator served to the simulator's
    gavel ordering (--gavel-allocator 'exec:...'; docs/policy-protocol.md):
    implement allocate."""

    name = "python-allocator"
    wants_running = False

    def hello(self, arg, seed):
        """Called once before any request."""

    def allocate(self, models, gpus, jobs):
        """Each job group's share of time on each model: models are the GPU
        models' names, gpus their GPU counts, and each job a dict with id,
        gpus (per job), count (identical jobs it stands for) and throughput
        (one per model). Return one list of len(models) shares in [0, 1]
        per job, summing to at most 1, within the models' capacity."""
        raise NotImplementedError


class NodePicker:
    """Base class of a node-level placement policy served to the simulator
    (--policy 'exec:...'; docs/policy-protocol.md): implement pick. The
    simulator's gang placer keeps the gang's constraints and asks for one
    task's host at a time."""

    name = "python-picker"
    wants_running = False

    def hello(self, arg, seed):
        """Called once before any request."""

    def pick(self, gpus, milli, hosts):
        """The host for one task of gpus whole GPUs (or milli thousandths of
        one GPU when gpus is 0), among the candidate hosts that can take it:
        dicts with host (its name), free (whole free GPUs), gpus (its GPUs)
        and net (its ToR's name, "" when the cluster has no network level).
        Return one candidate's name, or "" to leave the task unplaced."""
        raise NotImplementedError


def _reply(policy, msg):
    method = msg.get("method")
    if method == "hello":
        policy.hello(msg.get("arg", ""), msg.get("seed", 0))
        return {"name": policy.name, "running": bool(policy.wants_running), "protocol": PROTOCOL}
    if method == "enqueued":
        return {"priorities": [int(p) for p in policy.enqueued(msg["now"], msg["jobs"])]}
    if method == "running":
        return {"priorities": [int(p) for p in policy.running(msg["now"], msg["jobs"])]}
    if method == "allocate":
        return {"time": [[float(v) for v in row] for row in policy.allocate(msg["models"], msg["gpus"], msg["jobs"])]}
    if method == "pick":
        return {"host": str(policy.pick(msg["gpus"], msg["milli"], msg["hosts"]))}
    return {"error": "unknown method %r" % (method,)}


def serve(policy, stdin=None, stdout=None):
    """Answer the simulator's requests until it says bye or closes stdin."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    for line in stdin:
        msg = json.loads(line)
        if msg.get("method") == "bye":
            return
        try:
            out = _reply(policy, msg)
        except Exception as e:  # reported to the simulator, which stops the run
            out = {"error": "%s: %s" % (type(e).__name__, e)}
        stdout.write(json.dumps(out, separators=(",", ":")))
        stdout.write("\n")
        stdout.flush()
