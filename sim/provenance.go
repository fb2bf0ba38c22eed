package sim

// Provenance says what produced a result, so that it can be reproduced
// and two results told apart: the program's version, the command and
// every setting, the input files' hashes and the seeds. The CLI fills it
// (simcli); the simulator only carries it.
type Provenance struct {
	// Version is the gpusched module's version ("(devel)" for a build
	// from a checkout), Commit and Modified its VCS revision and whether
	// the tree had changes, GoVersion the toolchain's (all from the
	// binary's build information; empty when it has none, as under go
	// test).
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion,omitempty"`
	// Program is the main module's path and version when the binary is
	// not gpusched's own (a researcher's main that mounts the sim command
	// with its own policies), and Registered the policies its
	// policy.Registry holds, as "placer NAME", "ordering NAME" (orderings
	// and demotions) and "allocator NAME".
	Program    string   `json:"program,omitempty"`
	Registered []string `json:"registered,omitempty"`
	// Command is the command that ran (e.g. "gpusched sim compare").
	Command string `json:"command"`
	// Flags holds every flag of the command with its value, given or
	// default, but those that only say where and how to write (--out,
	// --quiet, --no-plots, --no-jobs-csv, --parallel); Set names those
	// given on the command line, sorted.
	Flags map[string]string `json:"flags"`
	Set   []string          `json:"set"`
	// Inputs are the files the flags name, with their SHA-256.
	Inputs []InputFile `json:"inputs,omitempty"`
	// Seeds are the seeds of the command (compare --seeds: all of them).
	Seeds []uint64 `json:"seeds,omitempty"`
	// Run holds this run's settings that differ from Flags (a compare's
	// policy and ordering, a sweep's parameters, a seed), and under
	// "effective." what the run derived from them (an ordering that turns
	// preemption on: effective.preempt=queue).
	Run map[string]string `json:"run,omitempty"`
	// Config is a short hash of Flags and Inputs' hashes: two runs with
	// the same Config had the same settings and inputs.
	Config string `json:"config"`
}

// InputFile is one input file of a run.
type InputFile struct {
	Flag   string `json:"flag"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}
