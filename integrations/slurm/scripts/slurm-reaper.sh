#!/usr/bin/env bash
# slurm-reaper.sh PID RUNDIR: wait until process PID (the Go test that
# started the daemons) is gone, then stop what slurm-up.sh started for
# RUNDIR (slurm-down.sh) and remove RUNDIR. The harness starts it in a
# process group of its own right after slurm-up.sh, so the daemons do not
# outlive a test that the go test timeout, a signal or a crash ended before
# its own cleanup ran. After a normal end the test has cleaned up already
# and this finds nothing left to do.
pid=$1 run=$2
while kill -0 "$pid" 2>/dev/null; do sleep 1; done
"$(dirname "$0")/slurm-down.sh" "$run" >/dev/null 2>&1
case "$run" in
*/gpusched-slurm-*) rm -rf "$run" ;; # only a run directory the harness made
esac
