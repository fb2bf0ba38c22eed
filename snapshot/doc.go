// Package snapshot saves a Scheduler's state as a file and loads it back:
// the cluster, the queue tree, health, and every live job with its state,
// times and placement — the file `gpusched explain` reads to say why each
// waiting job waits, and `gpusched sim run --save-state` writes.
//
// The package is the encoding and its versions only. The state itself is
// the Scheduler's (gpusched.State: the configuration as reconfigured, the
// live jobs in order of submission, every concern's part), which
// Scheduler.State returns and gpusched.Restore turns back into a
// Scheduler. Capture (FromState of Scheduler.State) writes it into a
// State, naming hosts, GPUs and levels; Encode writes that as YAML, sealed;
// Load (or Decode, then State.Restore) reads a file back: it decodes the
// names (State.SchedulerState) and calls gpusched.Restore, with errors
// naming the file's line and field. A cycle run on the loaded Scheduler at
// State.Now decides what the captured one would decide at that time,
// within the limits below.
//
// # The file
//
// YAML (or JSON, which is YAML too). Times are RFC 3339, durations Go
// durations ("90m", "1h30m"). Field by field:
//
//	version: 9                  # the format's version; 1 to 9 are read
//	now: 2025-01-01T10:00:00Z   # the time of the state (required)
//	cluster:                    # exactly one of preset, file, machine, spec
//	  preset: h100-1k           #   a built-in cluster (topology.PresetNames)
//	  file: cluster.yaml        #   a cluster file, relative to the state file
//	  machine: dgx-h100         #   generated: with hosts, hostsPerToR,
//	  hosts: 8                  #   torsPerSpine; host names MACHINE-1 …
//	  spec: {…}                 #   the cluster inline, as a cluster file
//	hosts: 8                    # the cluster's hosts (version 8), checked
//	placer: topology            # gang placer by name (gang.PolicyNames)
//	workload: [{gpus: 1, cpuMilli: 8000, weight: 0.4}, …]
//	                            # fgd's target workload (required with fgd)
//	seed: 42                    # gpusched.Config.Seed
//	defaultRuntime: 1h          # gpusched.Config.DefaultRuntime
//	maxReservations: 4          # gpusched.Config.MaxReservations
//	maxRestarts: 3              # gpusched.Config's MaxRestarts, DrainGrace,
//	drainGrace: 5m              #   DrainKeep, AdmitTimeout, MaxGrace
//	admitTimeout: 10m           #   (version 2)
//	queues: {root: {…}}         # the queue tree (queue.Config)
//	usage:                      # Fair Tree's decayed usage per queue
//	- {queue: research, value: 5.2e6, at: 2025-01-01T09:55:00Z}
//	health:                     # parts that are not healthy
//	- {host: dgx-h100-3, state: failed}       # draining or failed
//	- {gpu: dgx-h100-4/gpu2, state: draining}
//	jobs:                       # workload.Job fields, plus:
//	- id: train-1
//	  queue: research
//	  groups: [{count: 2, gpus: 8}]
//	  submitted: 2025-01-01T09:00:00Z   # required, not after now
//	  state: running            # pending (default), requeued, preempted,
//	                            # admitted or running
//	  started: 2025-01-01T09:05:00Z     # running jobs: not before
//	                            # submitted, not after now
//	  progress: 2h              # work saved by checkpoints of earlier runs
//	  checkpoint: 2025-01-01T09:35:00Z  # running jobs: last checkpoint of
//	                            # this run (version 3)
//	  admitted: 2025-01-01T09:04:00Z    # when bound (admission clock)
//	  preemptions: 1            # times preempted, times stopped by
//	  restarts: 0               #   failures (version 2)
//	  moves: 1                  # migrations completed (version 5)
//	  domain: dgx-h100-1        # the domain its placement was made within
//	                            #   (version 6; absent: the cluster)
//	  placement:                # admitted and running jobs: one entry per
//	  - {host: dgx-h100-1, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}   # task
//	  - {host: dgx-h100-2, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
//	  # a share: {host: H, gpu: 2, milli: 500}
//	  # a MIG instance: {host: H, gpu: 0, mig: 3g.40gb, start: 4}
//	  # several groups: {group: NAME or index, host: …}; without group,
//	  # entries fill the groups in order, each up to its count
//	nominations:                # preemptions in flight (version 3), in
//	- job: serve-2              #   the order made
//	  victims: [train-1]        # asked to stop, still holding
//	  due: 2025-01-01T09:40:00Z # when they should have stopped
//	  placement: [...]          # promised to the job (as a job's);
//	                            # absent: it only waits for its victims
//	  domain: dgx-h100-3/nvswitch0  # the domain it was placed within
//	                            #   (version 7; absent: the cluster)
//	reservations:               # backfill reservations kept from the last
//	- job: big-1                #   cycle (version 4), in the order taken,
//	                            #   then those kept on standby
//	  at: 2025-01-01T11:00:00Z  # reserved start (absent when forever)
//	  forever: false            # only once jobs without an estimate end
//	  placement: [...]          # the reserved placement (as a job's)
//	  current: true             # the next cycle reuses it as is; its
//	  built: 2025-01-01T09:50Z  #   what-if ledger, built then, is rebuilt
//	  filter: "@,0"             # the model filter it was computed under
//	  domain: tor2              # the domain it was placed within (v7)
//	elastic: {noGrow: false}    # Config.Elastic (absent: off)
//	resizes:                    # resized elastic jobs, in the order of
//	- job: train-3              #   their first shrink
//	  size: [8]                 # tasks per group before the first shrink
//	  shrink: [...]             # tasks a shrink in flight stops (as a
//	  for: serve-2              #   job's placement), for this job, with
//	  grace: 2m                 #   this grace; or
//	  grow: [...]               # the tasks a grow in flight added
//	cordoned: [dgx-h100-5]      # hosts cordoned (version 5)
//	leaving:                    # hosts waiting for their jobs to end to
//	- {host: dgx-h100-7}        #   leave, or to come back with another
//	- {host: dgx-h100-8, template: dgx-h100-4gpu}   # template (version 5)
//	defrag:                     # gpusched.Config.Defrag (version 5)
//	  after: 10m                #   DefragConfig.After, Grace, MaxPerJob
//	  grace: 2m                 #   and the budget: perHour, lostPerHour
//	  maxPerJob: 2              #   (thousandths of a GPU-second), minValue
//	  perHour: 4
//	  consolidate:              # DefragConfig.Consolidate (version 6)
//	    levels: [tor]           #   by name (absent: the defaults)
//	    idle: 30m               #   and idle, target, maxDomains, its own
//	    perHour: 2              #   budget: perHour, lostPerHour
//	consolidation:              # consolidation's state (version 6): its
//	  log: [{at: 2025-01-01T09:30:00Z, lost: 60000}]  # budget's log,
//	  busy: 2025-01-01T09:40:00Z  # when a job last waited, and whether
//	  nothingFound: true        #   the last pass found nothing on the
//	  foundMoves: 1             #   cluster as it is (with the room the
//	                            #   budgets then left)
//	migrations:                 # moves in flight (version 5): issued,
//	- job: train-7              #   not yet reported Migrated, in the
//	  to: [...]                 #   order issued; the destination (as a
//	                            #   job's placement); the gang it makes
//	                            #   room for is a nomination; domain:
//	                            #   as a nomination's (version 7)
//	defragLog:                  # the budget's log: migrations issued in
//	- {at: 2025-01-01T09:20:00Z, lost: 1200000}   # the last hour
//	noPlans:                    # jobs the PlanPreemptor found no plan for
//	- job: big-2                #   and will not search for again until
//	  priority: 3               #   something that matters changes
//	  until: 2025-01-01T10:30:00Z  # (version 5); see Limits
//	  quotas: true
//	  gained: [dgx-h100-3]      #   hosts that gained capacity, and where
//	  eligible: [dgx-h100-1]    #   a job became a possible victim, since
//	                            #   (version 7)
//	stopping: [train-4]         # victims asked to stop that nothing in
//	                            #   flight names (their nomination was
//	                            #   dropped; version 6)
//	fresh: [serve-3]            # jobs admitted in the last cycle, possible
//	                            #   victims from the next (version 6)
//	faults:                     # health changes not yet planned (version
//	- {host: dgx-h100-3, state: failed}   # 9): the next cycle recovers
//	                            #   their jobs; host, gpu or domain
//	recovering:                 # recoveries issued, not yet carried out
//	- {job: train-5, action: requeue}     # (version 9): requeue, drain
//	                            #   or end
//	evictionRetry: 20m          # Config.EvictionRetry (version 6)
//	reserveWholeHosts: true     # Config.ReserveWholeHosts (version 7)
//	maxClockSkew: 1h            # Config.MaxClockSkew (version 8)
//	maxTombstones: 5000         # Config.MaxTombstones (version 8)
//	tombstones:                 # ended jobs remembered (version 8), oldest
//	- job: train-0              #   first: their redelivered events and
//	  state: succeeded          #   submissions are refused
//	  at: 2025-01-01T09:30:00Z  #   (ErrAlreadyApplied)
//	refusals:                   # refused stops in force (version 6), in
//	- victim: train-1           #   the order refused: the victim, the
//	  run: 2025-01-01T09:04:00Z #   admission of its run refused, when
//	  until: 2025-01-01T10:05:00Z  # the refusal lapses, the host's
//	  reason: PodDisruptionBudget  # reason, the jobs whose plans it
//	  blocked: [serve-2]        #   broke
//	notes: [...]                # what the state could not carry (Capture)
//	# sealed: bytes=48213 crc32c=5f0e3a91 jobs=120 health=2 nominations=1
//	                            # the trailer (version 8): the length and
//	                            # CRC-32C of everything before it and the
//	                            # length of every non-empty list
//
// # A file that proves itself
//
// A version 8 file ends with its seal, the trailer line above (seal.go).
// Decode checks it before reading anything else: a file cut short (a
// partial copy, a full disk, a torn write), extended or edited is refused
// with an error wrapping ErrNotWhole that says what is wrong (no trailer,
// a malformed one, the length, the checksum, a list's count, the number
// of hosts) — it never loads with a job missing. A file of versions 1 to
// 7, or without a version (written by hand), has no trailer and loads as
// before. To edit a version 8 file by hand, delete its trailer and set
// its version to 7. WriteFile writes a state atomically (a temporary
// file in the same directory, synced, renamed over the old one, the
// directory synced), so that a crash leaves the old file or the new one.
//
// A bad file gets an *Error naming the file, the line and the field path
// (jobs[3].placement[1].host): a job started after now or before it was
// submitted, a placement that collides with another job's or breaks a
// quota, a host the cluster lacks.
//
// # Limits
//
// A loaded Scheduler holds everything the state carries (version 7):
// jobs in their states (requeued and preempted ones too), with their
// admission times, preemption, restart and migration counts and saved
// progress; the queues' Fair Tree usage; cordons; the settings (Seed,
// DefaultRuntime, MaxReservations, MaxRestarts, DrainGrace, DrainKeep,
// AdmitTimeout, MaxGrace, BackfillAround, ReserveDepth, ReserveWholeHosts,
// Elastic, Defrag with Consolidate, EvictionRetry). Fed the same events,
// it decides as the captured one does
// (TestLoadedDecidesAsOriginal), within these limits:
//
//   - Backfill reservations kept across cycles are restored (version 4,
//     Scheduler.RestoreReservation): their times and placements, and,
//     for one the next cycle would reuse as is, its what-if ledger,
//     rebuilt from the live state as of its build time
//     (TestLoadedDecidesAsOriginalBackfill; the Scheduler drops a kept
//     ledger whenever the rebuilt one could differ: a job it modelled
//     released, or started late enough to run past the reserved time, a
//     health change, a cordon or an uncordon). Cached placement
//     failures are rebuilt, not restored (their explanations counted the
//     free GPUs of the cycle that cached them).
//   - The Preemptor is not saved: a loaded Scheduler preempts with
//     Options.Preemptor only, and Load asks for the choice (a Preemptor,
//     or Options.NoPreemption; neither is ErrPreemptorChoice). The preemptions in flight are (version 3):
//     the jobs waiting for their victims, the victims marked as being
//     preempted, and the placements promised (nominations), restored
//     through Scheduler.RestoreNomination
//     (TestLoadedDecidesAsOriginalPreempting).
//   - Elastic resizes are restored (Scheduler.RestoreResize): a job's
//     size before its first shrink (what it grows back to) and the exact
//     tasks of a shrink or grow in flight (TestElasticInFlight).
//   - Migrations in flight are restored (version 5,
//     Scheduler.RestoreDefrag): the moving jobs, marked as being
//     preempted, their destinations (held from the next cycle on, so a
//     later Migrated binds the job there), the completed moves of each
//     job (DefragConfig.MaxPerJob) and the budget's log of the last hour.
//     A failed defragmentation plan is not saved: it is a pure cache,
//     kept only for the time it was made at while the ledger is
//     unchanged, when planning again fails too
//     (TestDefragFailureNotSticky).
//   - A running job's checkpoint is saved only if it was reported
//     (Checkpointed); one estimated from its CheckpointInterval is
//     estimated again by the loaded Scheduler as time goes on
//     (TestRestoredCheckpointEstimate).
//   - Consolidation when idle (version 6, Scheduler.ConsolidateState and
//     RestoreConsolidate): its budget's log, when a job last waited and
//     the "last pass found nothing" memo, which holds for the cluster as
//     loaded (TestLoadedDecidesAsOriginalDefrag draws Consolidate).
//   - Refused stops in force (version 6, Scheduler.Refusals and
//     RestoreRefusal): the victim is not chosen again before the refusal
//     lapses, and the jobs whose plans it broke say so
//     (TestLoadedDecidesAsOriginalPreempting: the host refuses some stops).
//   - Victims asked to stop whose nomination was dropped (another
//     victim's stop refused) still stop (version 6, Scheduler.Stopping
//     and RestoreStopping): they are no victims again.
//   - The jobs admitted in the last cycle (version 6, Scheduler.Fresh
//     and RestoreFresh): the next cycle makes them possible victims,
//     which ends the preemption verdicts they could change.
//   - A holding job's placement domain (version 6): an elastic gang grows
//     back only there; an older file loads every placement as made within
//     the whole cluster.
//   - A PlanPreemptor makes a bounded number of plans per cycle and does
//     not search again for a job whose last search found nothing while
//     nothing that could change that happens; which jobs get a plan in
//     a cycle depends on these verdicts, so the state carries them
//     (version 5, Scheduler.NoPlans and RestoreNoPlan), with the hosts
//     where capacity came back or a job became a possible victim since
//     each (version 7): whether such a change ends a verdict is asked
//     when a cycle next plans for the job, of the Scheduler as it is
//     then (a host freed before the cycle may be taken again in it by
//     the job nominated there), so the loaded Scheduler asks it then
//     too. Only a Config.Preemptor that is a *PlanPreemptor has them.
//   - Hosts waiting to leave the cluster (RemoveHosts) or to change shape
//     (SetHostGPUs) are asked again on load (version 5, Scheduler.
//     Leaving); one whose jobs are gone leaves at load rather than at
//     the start of the next cycle.
//   - The "random" placer seeds each job from its submission sequence
//     number, which a loaded Scheduler numbers afresh.
//   - Not saved: OmitPending, Stats (Options.Stats sets the latter).
//   - The health changes not yet planned and the recoveries in flight
//     (version 9): the loaded Scheduler's first cycle lists the
//     Recoveries the captured one's would, none it already issued, and a
//     Requeue carrying out an ActionRequeue issued before the capture
//     counts a restart (Config.MaxRestarts). A file of an older version
//     has every part of its health noted again: the first cycle lists
//     Recoveries for the jobs there that the captured Scheduler may have
//     handled already (`gpusched explain` does not print them), and a
//     recovery issued before the capture counts no restart.
//
// Capture lists in State.Notes the limits that apply to the state it
// captures.
package snapshot
