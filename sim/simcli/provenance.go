package simcli

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/policy"
)

// modulePath is gpusched's module, whose version the build information
// carries when another main module (a researcher's own) imports it.
const modulePath = "github.com/gpusched/gpusched"

// buildInfo returns gpusched's version, VCS revision, whether the tree
// was modified, and the Go version, from the binary's build information.
func buildInfo() (version, commit string, modified bool, goVersion string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown", "", false, ""
	}
	version = bi.Main.Version
	if bi.Main.Path != modulePath {
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				version = depVersion(d)
			}
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return cmp.Or(version, "(devel)"), commit, modified, bi.GoVersion
}

// depVersion is a dependency's version, and its replacement's when a
// replace directive (a local clone: go mod edit -replace) stands for it.
func depVersion(d *debug.Module) string {
	if d.Replace == nil {
		return d.Version
	}
	return strings.TrimSpace(d.Version + " => " + d.Replace.Path + " " + d.Replace.Version)
}

// program returns the main module's path and version when it is not
// gpusched's: a researcher's own binary that mounts the sim command.
func program() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path == modulePath || bi.Main.Path == "" {
		return ""
	}
	return strings.TrimSpace(bi.Main.Path + " " + bi.Main.Version)
}

// Version returns gpusched's version line: "gpusched VERSION (commit
// REV[, modified]) GOVERSION", from the binary's build information.
func Version() string {
	v, c, m, g := buildInfo()
	s := "gpusched " + v
	if c != "" {
		s += " (commit " + c
		if m {
			s += ", modified"
		}
		s += ")"
	}
	if g != "" {
		s += " " + g
	}
	return s
}

// inputFlags are the flags whose values name input files: the file is
// the value, or what follows its KIND: prefix.
var inputFlags = []string{"file", "trace", "queues", "gpu-speeds", "job-types", "slurm", "kube", "config", "baseline"}

// inputPath returns the file a flag's value names, or "".
func inputPath(flag, v string) string {
	switch {
	case v == "":
		return ""
	case flag == "trace" || flag == "queues":
		_, path, ok := strings.Cut(v, ":")
		if !ok || path == "builtin" || strings.HasPrefix(v, "synthetic:") {
			return ""
		}
		return path
	case flag == "gpu-speeds" && v == "gavel", flag == "job-types" && v == "uniform":
		return ""
	}
	return v
}

// hashInputs hashes the files (or, for a directory, each file in it)
// that the flags name.
func hashInputs(flags map[string]string) ([]sim.InputFile, error) {
	var out []sim.InputFile
	// An exec: policy's files (its script) are inputs too.
	for _, name := range []string{"ordering", "orderings", "gavel-allocator", "policy", "policies"} {
		_, cmdline, ok := strings.Cut(flags[name], "exec:")
		if !ok {
			continue
		}
		for _, a := range strings.Fields(cmdline) {
			if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
				in, err := hashFile(a)
				if err != nil {
					return nil, err
				}
				in.Flag = name
				out = append(out, in)
			}
		}
	}
	for _, name := range inputFlags {
		path := inputPath(name, flags[name])
		if path == "" {
			continue
		}
		files := []string{path}
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			ents, err := os.ReadDir(path)
			if err != nil {
				return nil, err
			}
			files = files[:0]
			for _, e := range ents {
				if e.Type().IsRegular() {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
		}
		for _, f := range files {
			in, err := hashFile(f)
			if err != nil {
				return nil, inputError("--"+name, f, err)
			}
			in.Flag = name
			out = append(out, in)
		}
	}
	return out, nil
}

func hashFile(path string) (sim.InputFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return sim.InputFile{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return sim.InputFile{}, err
	}
	return sim.InputFile{Path: path, SHA256: hex.EncodeToString(h.Sum(nil)), Bytes: n}, nil
}

// outputFlags say where and how a command writes, not what it computes:
// provenance leaves them out, so that the same run written to two
// directories has the same summary.json.
var outputFlags = []string{"help", "out", "quiet", "no-plots", "no-jobs-csv", "parallel"}

// newProvenance records what the command cmd runs: the version, every
// flag but outputFlags, the input files' hashes and seeds.
func newProvenance(cmd *cobra.Command, seeds []uint64, reg *policy.Registry) (*sim.Provenance, error) {
	p := &sim.Provenance{Command: cmd.CommandPath(), Flags: map[string]string{}, Seeds: seeds, Program: program()}
	p.Version, p.Commit, p.Modified, p.GoVersion = buildInfo()
	for _, n := range reg.Placers() {
		p.Registered = append(p.Registered, "placer "+n)
	}
	for _, n := range reg.Orderings() {
		p.Registered = append(p.Registered, "ordering "+n)
	}
	for _, n := range reg.Allocators() {
		p.Registered = append(p.Registered, "allocator "+n)
	}
	for _, n := range reg.Sizers() {
		p.Registered = append(p.Registered, "sizer "+n)
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if slices.Contains(outputFlags, f.Name) {
			return
		}
		p.Flags[f.Name] = f.Value.String()
		if f.Changed {
			p.Set = append(p.Set, f.Name)
		}
	})
	slices.Sort(p.Set)
	if p.Set == nil {
		p.Set = []string{}
	}
	var err error
	if p.Inputs, err = hashInputs(p.Flags); err != nil {
		return nil, err
	}
	h := sha256.New()
	keys := make([]string, 0, len(p.Flags))
	for k := range p.Flags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, p.Flags[k])
	}
	for _, in := range p.Inputs {
		fmt.Fprintf(h, "%s %s\n", in.Path, in.SHA256)
	}
	p.Config = hex.EncodeToString(h.Sum(nil))[:12]
	return p, nil
}

// flagValues returns every run flag's value in r.
func (r runConfig) flagValues() map[string]string {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	r.bind(fs, true)
	m := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) { m[f.Name] = f.Value.String() })
	return m
}

// runProvenance returns base with one run's settings: those of given
// (the run as asked) that differ from the command's flags, and under
// "effective." those that eff (given with its ordering resolved,
// runConfig.effective) changed.
func runProvenance(base *sim.Provenance, given, eff runConfig) *sim.Provenance {
	p := *base
	p.Run = map[string]string{}
	g := given.flagValues()
	for k, v := range g {
		if k == "preset" || k == "file" {
			continue // the command's cluster flags say (cmd/gpusched has its own)
		}
		if bv, ok := base.Flags[k]; !ok || bv != v {
			p.Run[k] = v
		}
	}
	for k, v := range eff.flagValues() {
		if g[k] != v {
			p.Run["effective."+k] = v
		}
	}
	if len(p.Run) == 0 {
		p.Run = nil
	}
	return &p
}
