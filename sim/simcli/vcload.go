package simcli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// vcLoadOfHelp is --vc-load-of's help.
const vcLoadOfHelp = "with --queues vc:PATH or vc-hard:PATH, a load of its own for some VCs, as VC=LOAD,… (e.g. 6214e9=1.2,ed69ec=0.1): " +
	"each named VC's arrivals are scaled to offer LOAD on its own GPUs as --vc-load does; the VCs not named take --vc-load, or keep their times without it"

// parseVCLoads reads a --vc-load-of value: VC=LOAD pairs, comma-separated,
// each LOAD positive and finite, each VC named once. The empty string is
// no loads.
func parseVCLoads(v string) (map[string]float64, error) {
	out := map[string]float64{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for part := range strings.SplitSeq(v, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("--vc-load-of %q: want VC=LOAD,… (e.g. 6214e9=1.2), not %q", v, part)
		}
		l, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || !(l > 0) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("--vc-load-of %q: VC %s: load %q: want a positive number", v, name, val)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--vc-load-of %q: VC %s named twice", v, name)
		}
		out[name] = l
	}
	return out, nil
}

// vcLoads returns each VC's target load under --vc-load and --vc-load-of:
// known holds the VCs of the VC file, and a VC of --vc-load-of outside it
// is an error.
func (rc runConfig) vcLoads(known map[string]int) (map[string]float64, error) {
	if math.IsInf(rc.vcLoad, 0) {
		return nil, fmt.Errorf("--vc-load %g: want a finite load", rc.vcLoad)
	}
	each, err := parseVCLoads(rc.vcLoadOf)
	if err != nil {
		return nil, err
	}
	loads := map[string]float64{}
	for q := range known {
		if rc.vcLoad > 0 {
			loads[q] = rc.vcLoad
		}
	}
	for q, l := range each {
		if _, ok := known[q]; !ok {
			return nil, fmt.Errorf("--vc-load-of: VC %q is not in the VC file", q)
		}
		loads[q] = l
	}
	return loads, nil
}
