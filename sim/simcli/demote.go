package simcli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/data"
	"github.com/gpusched/gpusched/sim/policy"
)

// parseDemote reads --demote: "" (none), "las:H1,H2,…" (Tiresias'
// 2D-LAS with thresholds in GPU-hours), "slice:LEASE" (Gandiva-style
// time slicing with a lease such as 10m) or a demotion registered in reg,
// NAME[:ARG] (built with seed 0: parseDemoteSeed builds a run's).
func parseDemote(v string, reg *policy.Registry) (queue.Demotion, error) {
	return parseDemoteSeed(v, reg, 0)
}

func parseDemoteSeed(v string, reg *policy.Registry, seed uint64) (queue.Demotion, error) {
	if v == "" {
		return nil, nil
	}
	kind, arg, _ := strings.Cut(v, ":")
	if f, ok := reg.LookupDemotion(kind); ok {
		d, err := f(arg, seed)
		if err != nil {
			return nil, fmt.Errorf("--demote %q: %w", v, err)
		}
		return d, nil
	}
	switch kind {
	case "las":
		var l queue.LAS
		for _, f := range strings.Split(arg, ",") {
			h, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return nil, fmt.Errorf("--demote %q: threshold %q: want GPU-hours such as 1 or 0.5", v, f)
			}
			l.Thresholds = append(l.Thresholds, h*3600)
		}
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("--demote %q: %w", v, err)
		}
		return l, nil
	case "slice":
		d, err := time.ParseDuration(arg)
		if err != nil {
			return nil, fmt.Errorf("--demote %q: lease %q: want a duration such as 10m", v, arg)
		}
		s := queue.TimeSlice{Lease: d}
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("--demote %q: %w", v, err)
		}
		return s, nil
	}
	known := "las:H1,H2,… (Tiresias 2D-LAS, thresholds in GPU-hours) or slice:LEASE (time slicing)"
	if r := reg.Orderings(); len(r) > 0 {
		known += ", or a registered " + strings.Join(r, ", ")
	}
	return nil, fmt.Errorf("--demote %q: want %s", v, known)
}

// readGPUSpeeds reads --gpu-speeds: "" (none), "gavel" (the embedded
// table, sim/data) or a table file.
func readGPUSpeeds(v string) (*sim.SpeedTable, error) {
	switch v {
	case "":
		return nil, nil
	case "gavel":
		return sim.ReadSpeedTable(data.GPUSpeedsGavel(), data.GPUSpeedsGavelName)
	}
	f, err := openInput("--gpu-speeds", v)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return sim.ReadSpeedTable(f, v)
}
