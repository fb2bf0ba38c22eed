package slurm

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusched/gpusched/topology"
)

// Topology is a site's network as topology.conf or topology.yaml describes
// it: a tree of switches, or blocks.
type Topology struct {
	// File is the name the file was read under.
	File string
	// Kind is "tree" or "block" ("flat": no network levels).
	Kind string
	// Switches are the tree's switches (Kind "tree"), in file order.
	Switches []Switch
	// Blocks are the blocks (Kind "block"), in file order.
	Blocks []Block
	// BlockSizes are the block plugin's aggregation sizes, in nodes.
	BlockSizes []int
}

// Switch is one SwitchName line.
type Switch struct {
	Name     string
	Line     int
	Switches []string // children switches, expanded
	Nodes    []string // nodes directly below, expanded
}

// Block is one BlockName line.
type Block struct {
	Name  string
	Line  int
	Nodes []string
}

// MaxSwitches bounds the switches or blocks a topology may declare.
const MaxSwitches = 1 << 16

// ReadTopology reads topology.conf or, by its .yaml/.yml extension,
// topology.yaml.
func ReadTopology(path string) (*Topology, []Warning, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") {
		return ParseTopologyYAML(b, path)
	}
	return ParseTopology(b, path)
}

// ParseTopology parses topology.conf: SwitchName lines (topology/tree) or
// BlockName and BlockSizes lines (topology/block), not both.
func ParseTopology(data []byte, name string) (*Topology, []Warning, error) {
	lines, err := lexLines(data, name)
	if err != nil {
		return nil, nil, err
	}
	t := &Topology{File: name, Kind: "flat"}
	var w warnings
	for _, l := range lines {
		first := l.Pairs[0]
		switch {
		case strings.EqualFold(first.Key, "SwitchName"):
			if t.Kind == "block" {
				return nil, nil, errAt(name, l.No, first.Key, "SwitchName in a file with BlockName lines")
			}
			t.Kind = "tree"
			s := Switch{Name: first.Value, Line: l.No}
			if s.Name == "" {
				return nil, nil, errAt(name, l.No, first.Key, "empty switch name")
			}
			for _, p := range l.Pairs[1:] {
				var err error
				switch {
				case strings.EqualFold(p.Key, "Switches"):
					s.Switches, err = topology.ExpandNames(p.Value)
				case strings.EqualFold(p.Key, "Nodes"):
					s.Nodes, err = topology.ExpandNames(p.Value)
				case strings.EqualFold(p.Key, "LinkSpeed"):
					w.add(name, l.No, p.Key, "link speeds are not modelled (gpusched uses per-level bandwidths)")
				default:
					w.add(name, l.No, p.Key, "SwitchName setting not understood (ignored)")
				}
				if err != nil {
					return nil, nil, errAt(name, l.No, p.Key, "%v", err)
				}
			}
			t.Switches = append(t.Switches, s)
		case strings.EqualFold(first.Key, "BlockName"):
			if t.Kind == "tree" {
				return nil, nil, errAt(name, l.No, first.Key, "BlockName in a file with SwitchName lines")
			}
			t.Kind = "block"
			b := Block{Name: first.Value, Line: l.No}
			if b.Name == "" {
				return nil, nil, errAt(name, l.No, first.Key, "empty block name")
			}
			for _, p := range l.Pairs[1:] {
				if strings.EqualFold(p.Key, "Nodes") {
					var err error
					if b.Nodes, err = topology.ExpandNames(p.Value); err != nil {
						return nil, nil, errAt(name, l.No, p.Key, "%v", err)
					}
					continue
				}
				if strings.EqualFold(p.Key, "BlockSizes") {
					if err := t.blockSizes(p.Value, name, l.No); err != nil {
						return nil, nil, err
					}
					continue
				}
				w.add(name, l.No, p.Key, "BlockName setting not understood (ignored)")
			}
			t.Blocks = append(t.Blocks, b)
		case strings.EqualFold(first.Key, "BlockSizes"):
			if err := t.blockSizes(first.Value, name, l.No); err != nil {
				return nil, nil, err
			}
		default:
			w.add(name, l.No, first.Key, "topology setting not understood (line ignored)")
		}
		if len(t.Switches)+len(t.Blocks) > MaxSwitches {
			return nil, nil, errAt(name, l.No, first.Key, "more than %d switches or blocks", MaxSwitches)
		}
	}
	if err := t.check(); err != nil {
		return nil, nil, err
	}
	if len(t.BlockSizes) > 1 {
		w.add(name, 0, "BlockSizes", "only the base block is modelled; aggregated block sizes %v are not", t.BlockSizes[1:])
	}
	return t, w, nil
}

func (t *Topology) blockSizes(v, file string, no int) error {
	t.BlockSizes = t.BlockSizes[:0]
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return errAt(file, no, "BlockSizes", "%q: want positive node counts", v)
		}
		t.BlockSizes = append(t.BlockSizes, n)
	}
	return nil
}

// check rejects duplicate names, unknown child switches, cycles and nodes
// under two leaves.
func (t *Topology) check() error {
	idx := map[string]int{}
	for i, s := range t.Switches {
		if j, ok := idx[s.Name]; ok {
			return errAt(t.File, s.Line, "SwitchName", "switch %s already declared on line %d", s.Name, t.Switches[j].Line)
		}
		idx[s.Name] = i
	}
	for _, s := range t.Switches {
		for _, c := range s.Switches {
			if _, ok := idx[c]; !ok {
				return errAt(t.File, s.Line, "Switches", "switch %s names child %s, which no SwitchName line declares", s.Name, c)
			}
		}
	}
	parent := map[string]string{}
	for _, s := range t.Switches {
		for _, c := range s.Switches {
			if p, ok := parent[c]; ok {
				return errAt(t.File, s.Line, "Switches", "switch %s is a child of both %s and %s", c, p, s.Name)
			}
			parent[c] = s.Name
		}
	}
	for _, s := range t.Switches { // a cycle: walking up never ends
		seen := map[string]bool{}
		for cur := s.Name; cur != ""; cur = parent[cur] {
			if seen[cur] {
				return errAt(t.File, s.Line, "Switches", "switch %s is its own ancestor", s.Name)
			}
			seen[cur] = true
		}
	}
	owner := map[string]string{}
	for _, s := range t.Switches {
		for _, n := range s.Nodes {
			if o, ok := owner[n]; ok {
				return errAt(t.File, s.Line, "Nodes", "node %s is under both %s and %s", n, o, s.Name)
			}
			owner[n] = s.Name
		}
	}
	bidx := map[string]int{}
	for i, b := range t.Blocks {
		if j, ok := bidx[b.Name]; ok {
			return errAt(t.File, b.Line, "BlockName", "block %s already declared on line %d", b.Name, t.Blocks[j].Line)
		}
		bidx[b.Name] = i
		for _, n := range b.Nodes {
			if o, ok := owner[n]; ok {
				return errAt(t.File, b.Line, "Nodes", "node %s is in both %s and %s", n, o, b.Name)
			}
			owner[n] = b.Name
		}
	}
	return nil
}

// ParseTopologyYAML parses Slurm's topology.yaml (Slurm 25.05): a list of
// named topologies, each tree (switches: switch, children, nodes), block
// (block_sizes, blocks: block, nodes) or flat. The one marked
// cluster_default, or the only one, is imported; the others are listed as
// warnings.
func ParseTopologyYAML(data []byte, name string) (*Topology, []Warning, error) {
	if len(data) > MaxFileBytes {
		return nil, nil, errAt(name, 0, "", "file is larger than %d bytes", MaxFileBytes)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, errAt(name, yamlLine(err), "", "%v", err)
	}
	var w warnings
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.SequenceNode {
		return nil, nil, errAt(name, 1, "", "want a list of topologies")
	}
	list := doc.Content[0].Content
	var chosen *yaml.Node
	for _, item := range list {
		if item.Kind != yaml.MappingNode {
			return nil, nil, errAt(name, item.Line, "", "a topology must be a mapping")
		}
		if v := mapGet(item, "cluster_default"); v != nil && v.Value == "true" {
			chosen = item
		}
	}
	if chosen == nil {
		if len(list) != 1 {
			return nil, nil, errAt(name, 1, "cluster_default", "%d topologies and none is cluster_default", len(list))
		}
		chosen = list[0]
	}
	for _, item := range list {
		if item != chosen {
			tn := ""
			if v := mapGet(item, "topology"); v != nil {
				tn = v.Value
			}
			w.add(name, item.Line, "topology", "%s: not the cluster default; not imported (partitions are not modelled)", tn)
		}
	}
	t := &Topology{File: name, Kind: "flat"}
	for i := 0; i+1 < len(chosen.Content); i += 2 {
		k, v := chosen.Content[i], chosen.Content[i+1]
		switch k.Value {
		case "topology", "cluster_default":
		case "flat":
		case "tree":
			t.Kind = "tree"
			sw := mapGet(v, "switches")
			if sw == nil || sw.Kind != yaml.SequenceNode {
				return nil, nil, errAt(name, v.Line, "tree", "want switches: a list")
			}
			for _, s := range sw.Content {
				if s.Kind != yaml.MappingNode {
					return nil, nil, errAt(name, s.Line, "switches", "a switch must be a mapping")
				}
				x := Switch{Line: s.Line}
				for j := 0; j+1 < len(s.Content); j += 2 {
					kk, vv := s.Content[j], s.Content[j+1]
					var err error
					switch kk.Value {
					case "switch":
						x.Name = vv.Value
					case "children":
						x.Switches, err = topology.ExpandNames(vv.Value)
					case "nodes":
						x.Nodes, err = topology.ExpandNames(vv.Value)
					default:
						w.add(name, kk.Line, kk.Value, "switch setting not understood (ignored)")
					}
					if err != nil {
						return nil, nil, errAt(name, vv.Line, kk.Value, "%v", err)
					}
				}
				if x.Name == "" {
					return nil, nil, errAt(name, s.Line, "switch", "a switch without a name")
				}
				t.Switches = append(t.Switches, x)
			}
		case "block":
			t.Kind = "block"
			if bs := mapGet(v, "block_sizes"); bs != nil {
				var vals []string
				for _, e := range bs.Content {
					vals = append(vals, e.Value)
				}
				if bs.Kind == yaml.ScalarNode {
					vals = []string{bs.Value}
				}
				if err := t.blockSizes(strings.Join(vals, ","), name, bs.Line); err != nil {
					return nil, nil, err
				}
			}
			bl := mapGet(v, "blocks")
			if bl == nil || bl.Kind != yaml.SequenceNode {
				return nil, nil, errAt(name, v.Line, "block", "want blocks: a list")
			}
			for _, b := range bl.Content {
				if b.Kind != yaml.MappingNode {
					return nil, nil, errAt(name, b.Line, "blocks", "a block must be a mapping")
				}
				x := Block{Line: b.Line}
				for j := 0; j+1 < len(b.Content); j += 2 {
					kk, vv := b.Content[j], b.Content[j+1]
					switch kk.Value {
					case "block":
						x.Name = vv.Value
					case "nodes":
						var err error
						if x.Nodes, err = topology.ExpandNames(vv.Value); err != nil {
							return nil, nil, errAt(name, vv.Line, "nodes", "%v", err)
						}
					default:
						w.add(name, kk.Line, kk.Value, "block setting not understood (ignored)")
					}
				}
				if x.Name == "" {
					return nil, nil, errAt(name, b.Line, "block", "a block without a name")
				}
				t.Blocks = append(t.Blocks, x)
			}
		default:
			w.add(name, k.Line, k.Value, "topology setting not understood (ignored)")
		}
		if len(t.Switches)+len(t.Blocks) > MaxSwitches {
			return nil, nil, errAt(name, k.Line, k.Value, "more than %d switches or blocks", MaxSwitches)
		}
	}
	if err := t.check(); err != nil {
		return nil, nil, err
	}
	return t, w, nil
}

func mapGet(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// yamlLine digs the line number out of a yaml.v3 error ("yaml: line N: …").
func yamlLine(err error) int {
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		j := i + 5
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if n, e := strconv.Atoi(s[i+5 : j]); e == nil {
			return n
		}
	}
	return 1
}

var _ = slices.Contains[[]string]
