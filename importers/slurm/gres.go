package slurm

import (
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/topology"
)

// GresConf is what the importer takes from gres.conf: the GPU lines.
type GresConf struct {
	// File is the name the file was read under.
	File string
	// AutoDetect is the global AutoDetect value ("" when absent).
	AutoDetect string
	// Lines are the Name=gpu lines in file order.
	Lines []GresLine
}

// GresLine is one Name=gpu line of gres.conf.
type GresLine struct {
	Line  int
	Nodes []string // NodeName, expanded; nil: every node
	Type  string
	Files []string // File, expanded: one device per GPU
	Count int64    // Count, or len(Files)
	Cores string   // Cores, as written (a CPU list such as "0-15,32-47")
	Links []int    // Links of a single-device line; nil when absent
}

// GPU is one GPU of a node as gres.conf declares it. Index is Slurm's GRES
// index (IDX in scontrol show job -d): the position among the node's GPU
// devices in gres.conf order.
type GPU struct {
	Index int
	Type  string
	File  string
	Cores string
	Links []int
	Line  int
}

// ReadGres reads gres.conf from path (see ParseGres).
func ReadGres(path string) (*GresConf, []Warning, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	return ParseGres(b, path)
}

// ParseGres parses gres.conf. Lines for other GRES (mps, shard, nic…) are
// listed as warnings; AutoDetect other than off is a warning too, because
// the devices are then found at runtime, not in the file.
func ParseGres(data []byte, name string) (*GresConf, []Warning, error) {
	lines, err := lexLines(data, name)
	if err != nil {
		return nil, nil, err
	}
	g := &GresConf{File: name}
	var w warnings
	total := 0
	for _, l := range lines {
		if len(l.Pairs) == 1 && strings.EqualFold(l.Pairs[0].Key, "AutoDetect") {
			g.AutoDetect = l.Pairs[0].Value
			if !strings.EqualFold(g.AutoDetect, "off") {
				w.add(name, l.No, "AutoDetect", "%s: devices found at runtime are not known here; only File= lines are imported", g.AutoDetect)
			}
			continue
		}
		gl := GresLine{Line: l.No}
		gname := ""
		for _, p := range l.Pairs {
			var err error
			switch {
			case strings.EqualFold(p.Key, "Name"):
				gname = p.Value
			case strings.EqualFold(p.Key, "NodeName"):
				gl.Nodes, err = topology.ExpandNames(p.Value)
			case strings.EqualFold(p.Key, "Type"):
				gl.Type = p.Value
			case strings.EqualFold(p.Key, "File"):
				gl.Files, err = topology.ExpandNames(p.Value)
			case strings.EqualFold(p.Key, "Count"):
				gl.Count, err = countSuffix(p.Value)
			case strings.EqualFold(p.Key, "Cores"), strings.EqualFold(p.Key, "CPUs"):
				if _, err = ParseList(p.Value); err == nil {
					gl.Cores = p.Value
				}
			case strings.EqualFold(p.Key, "Links"):
				gl.Links, err = parseLinks(p.Value)
			case strings.EqualFold(p.Key, "AutoDetect"):
				if !strings.EqualFold(p.Value, "off") {
					w.add(name, l.No, p.Key, "%s: devices found at runtime are not known here", p.Value)
				}
			case strings.EqualFold(p.Key, "Flags"), strings.EqualFold(p.Key, "MultipleFiles"):
				w.add(name, l.No, p.Key, "not modelled (ignored)")
			default:
				w.add(name, l.No, p.Key, "gres.conf setting not understood (ignored)")
			}
			if err != nil {
				return nil, nil, errAt(name, l.No, p.Key, "%q: %v", p.Value, err)
			}
		}
		if gname == "" {
			return nil, nil, errAt(name, l.No, "Name", "a line without Name=")
		}
		if gname != "gpu" {
			w.add(name, l.No, "Name", "%s: only gpu GRES are imported", gname)
			continue
		}
		if gl.Count == 0 {
			gl.Count = int64(len(gl.Files))
		}
		if len(gl.Files) > 0 && gl.Count != int64(len(gl.Files)) {
			return nil, nil, errAt(name, l.No, "Count", "Count=%d but File= names %d devices", gl.Count, len(gl.Files))
		}
		if gl.Count == 0 {
			return nil, nil, errAt(name, l.No, "File", "a gpu line with neither File= nor Count=")
		}
		if gl.Count > MaxGPUsPerNode {
			return nil, nil, errAt(name, l.No, "Count", "%d GPUs on one line; at most %d", gl.Count, MaxGPUsPerNode)
		}
		if gl.Links != nil && gl.Count != 1 {
			w.add(name, l.No, "Links", "Links on a line of %d devices would give each the same links; ignored (give one line per device)", gl.Count)
			gl.Links = nil
		}
		total += int(gl.Count)
		if total > MaxNodes*8 {
			return nil, nil, errAt(name, l.No, "", "too many GPU lines")
		}
		g.Lines = append(g.Lines, gl)
	}
	return g, w, nil
}

// GPUsOf returns the GPUs gres.conf declares for node, in Slurm's index
// order, or nil when no line names it.
func (g *GresConf) GPUsOf(node string) []GPU {
	if g == nil {
		return nil
	}
	var out []GPU
	for _, l := range g.Lines {
		if l.Nodes != nil && !contains(l.Nodes, node) {
			continue
		}
		for i := int64(0); i < l.Count; i++ {
			gpu := GPU{Index: len(out), Type: l.Type, Cores: l.Cores, Links: l.Links, Line: l.Line}
			if int(i) < len(l.Files) {
				gpu.File = l.Files[i]
			}
			out = append(out, gpu)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ParseList parses a list of integers and inclusive ranges as Slurm and
// Linux write CPU lists and GRES indices ("0-15,32-47"), in order. It
// allows at most 65,536 values, each at most 65,536.
func ParseList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(part, "-")
		lo, err1 := strconv.Atoi(a)
		hi := lo
		var err2 error
		if isRange {
			hi, err2 = strconv.Atoi(b)
		}
		if err1 != nil || err2 != nil || lo < 0 || hi < lo || hi > 1<<16 {
			return nil, errorf("want a list such as 0-15,32-47")
		}
		if len(out)+hi-lo+1 > 1<<16 {
			return nil, errorf("list too long")
		}
		for c := lo; c <= hi; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// parseLinks parses "-1,2,0,2": link counts to the node's other GPUs.
func parseLinks(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || v < -1 || v > 1<<10 || len(out) >= MaxGPUsPerNode {
			return nil, errorf("want link counts such as -1,2,0,2")
		}
		out = append(out, v)
	}
	return out, nil
}
