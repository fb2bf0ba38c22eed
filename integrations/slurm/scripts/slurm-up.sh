#!/usr/bin/env bash
# slurm-up.sh RUNDIR CONFDIR [EXTRADIR]: start munged, slurmctld -D and one slurmd -D -N
# per node of CONFDIR/slurm.conf (NodeName=node[01-NN]) on this host, all state under RUNDIR.
# With EXTRADIR (accounting, scenario (c)): EXTRADIR/slurm.conf's lines are added to
# slurm.conf (replacing the site's line for a key it sets), EXTRADIR/topology.conf's to
# topology.conf, and before slurmctld a MariaDB (own datadir under RUNDIR, 127.0.0.1:16306,
# no grant tables) and slurmdbd -D (EXTRADIR/slurmdbd.conf) start, and the cluster is added.
# Fake GPUs: character devices (major 195) under RUNDIR/dev, named by gres.conf's File=.
# slurm-down.sh RUNDIR stops them. Nothing here needs network beyond 127.0.0.1.
set -euo pipefail
run=$(realpath -m "$1"); conf=$(realpath "$2"); extra=${3:+$(realpath "$3")}
mkdir -p "$run"/{etc,state,spool,log,dev,munge}
chmod 700 "$run/munge"
# The configuration files, with @RUN@ replaced by the run directory.
for f in "$conf"/*.conf; do sed "s#@RUN@#$run#g" "$f" >"$run/etc/$(basename "$f")"; done
# GPUSCHED_SLURM_DEBUGFLAGS (e.g. Backfill, or Backfill,BackfillMap to investigate) becomes
# slurmctld's DebugFlags, so slurmctld.log shows what backfill planned ("none" or unset: none;
# TestConformance sets Backfill).
if [ -n "${GPUSCHED_SLURM_DEBUGFLAGS:-}" ] && [ "$GPUSCHED_SLURM_DEBUGFLAGS" != none ]; then
	echo "DebugFlags=$GPUSCHED_SLURM_DEBUGFLAGS" >>"$run/etc/slurm.conf"
fi
if [ -n "$extra" ]; then
	# Drop the site's lines for the keys the extra slurm.conf sets (not node or partition lines).
	keys=$(sed -n 's/^\([A-Za-z]*\)=.*/\1/p' "$extra/slurm.conf" | grep -v -x -e NodeName -e PartitionName | paste -sd'|')
	grep -v -i -E "^($keys)=" "$run/etc/slurm.conf" >"$run/etc/slurm.conf.site" || true
	cat "$run/etc/slurm.conf.site" "$extra/slurm.conf" | sed "s#@RUN@#$run#g" >"$run/etc/slurm.conf"
	cat "$extra/topology.conf" >>"$run/etc/topology.conf"
	sed "s#@RUN@#$run#g" "$extra/slurmdbd.conf" >"$run/etc/slurmdbd.conf"
	chmod 600 "$run/etc/slurmdbd.conf"
	mkdir -p "$run/mysql"
	mariadb-install-db --no-defaults --datadir="$run/mysql/data" --user=root --skip-test-db \
		--auth-root-authentication-method=normal >"$run/log/mariadb-install.log" 2>&1 &
	dbinit=$!
fi
# GPU device files named in gres.conf (File=@RUN@/dev/nvidia[0-7] → nvidia0…7).
for i in $(seq 0 15); do [ -e "$run/dev/nvidia$i" ] || mknod "$run/dev/nvidia$i" c 195 "$i"; done
# munge: a key of our own, a socket under RUN.
[ -s "$run/munge/munge.key" ] || dd if=/dev/urandom of="$run/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$run/munge/munge.key"
munged --key-file="$run/munge/munge.key" --socket="$run/munge/munge.socket" \
	--pid-file="$run/munge/munged.pid" --log-file="$run/munge/munged.log" --seed-file="$run/munge/seed" -f
export SLURM_CONF="$run/etc/slurm.conf"
if [ -n "$extra" ]; then
	wait "$dbinit" || { echo "mariadb-install-db failed:" >&2; tail -20 "$run/log/mariadb-install.log" >&2; exit 1; }
	mariadbd --no-defaults --datadir="$run/mysql/data" --user=root --skip-grant-tables \
		--bind-address=127.0.0.1 --port=16306 --socket="$run/mysql/mysqld.sock" \
		--pid-file="$run/mysql/mariadbd.pidfile" --log-error="$run/log/mariadb.log" >/dev/null 2>&1 &
	echo $! >"$run/mariadbd.pid"
	for _ in $(seq 1 60); do
		mariadb-admin --no-defaults -h 127.0.0.1 -P 16306 -u root ping >/dev/null 2>&1 && break
		sleep 0.5
	done
	cd "$run"
	slurmdbd -D >"$run/log/slurmdbd.out" 2>&1 &
	echo $! >"$run/slurmdbd.pid"
	cluster=$(sed -n 's/^ClusterName=//p' "$SLURM_CONF")
	for i in $(seq 1 60); do
		sacctmgr -i add cluster "$cluster" >/dev/null 2>&1 && break
		[ "$i" = 60 ] && { echo "slurmdbd did not come up; last log lines:" >&2; tail -n 20 "$run"/log/slurmdbd.* "$run/log/mariadb.log" >&2; exit 1; }
		sleep 0.5
	done
fi
cd "$run" # slurmd and its slurmstepd run here, which is how slurm-down.sh finds them
slurmctld -D -c -f "$SLURM_CONF" >"$run/log/slurmctld.out" 2>&1 &
echo $! >"$run/slurmctld.pid"
nodes=$(scontrol show hostnames "$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' "$SLURM_CONF" | paste -sd,)")
for n in $nodes; do
	slurmd -D -N "$n" -f "$SLURM_CONF" >"$run/log/slurmd-$n.out" 2>&1 &
	echo $! >"$run/slurmd-$n.pid"
done
# Wait until every node has registered (idle), at most 60 s.
want=$(echo "$nodes" | wc -w)
for _ in $(seq 1 120); do
	up=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 ~ /^(idle|alloc|mix)/' | sort -u | wc -l || true)
	[ "$up" -ge "$want" ] && { echo "slurm up: $up nodes"; exit 0; }
	sleep 0.5
done
echo "slurm did not come up; last log lines:" >&2; tail -20 "$run/log/slurmctld.out" "$run"/log/slurmctld.log >&2 || true
exit 1
