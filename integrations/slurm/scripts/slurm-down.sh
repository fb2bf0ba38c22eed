#!/usr/bin/env bash
# slurm-down.sh RUNDIR: cancel every job, stop the daemons slurm-up.sh
# started (by their pid files: slurmd, slurmctld, slurmdbd, MariaDB, munged), then the job step daemons (slurmstepd) left
# behind, found by their working directory, RUNDIR.
run=$(realpath -m "$1")
export SLURM_CONF="$run/etc/slurm.conf"
if [ -f "$run/slurmctld.pid" ]; then
	scancel --user="$(id -un)" 2>/dev/null
	for _ in $(seq 1 10); do
		[ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
		sleep 0.5
	done
fi
for p in "$run"/slurmd-*.pid "$run"/slurmctld.pid "$run"/slurmdbd.pid "$run"/mariadbd.pid "$run"/munge/munged.pid; do
	[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
done
sleep 0.5
for p in "$run"/slurmd-*.pid "$run"/slurmctld.pid "$run"/slurmdbd.pid "$run"/mariadbd.pid "$run"/munge/munged.pid; do
	[ -f "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
	rm -f "$p"
done
for p in $(pgrep -x slurmstepd); do
	[ "$(readlink "/proc/$p/cwd")" = "$run" ] && kill -9 "$p" 2>/dev/null
done
exit 0
