package snapshot

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpusched/gpusched/topology"
)

// Encode writes st as YAML, the form the package documentation shows,
// ending with the seal (version 8: a trailer line with the content's
// length, checksum and list counts, which Decode checks; see seal.go):
// short items (task groups, placements, quotas, health) on one line each,
// durations as Go writes them without zero units ("1h30m"), an inline
// cluster as a cluster file writes it. comment, if not empty, heads the
// file as YAML comment lines. Decode reads what Encode writes back into an
// equal State.
//
// The jobs are encoded a few at a time (a YAML encoder slows down on one
// large document): O(jobs × tasks).
func Encode(w io.Writer, st *State, comment string) error {
	c := *st
	spec, jobs, notes := c.Cluster.Spec, c.Jobs, c.Notes
	c.Cluster.Spec, c.Jobs, c.Notes = nil, nil, nil
	root, err := node(&c)
	if err != nil {
		return err
	}
	// Jobs and notes are written after the rest; drop their keys here.
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "jobs" {
			root.Content = append(root.Content[:i], root.Content[i+2:]...)
			break
		}
	}
	if spec != nil {
		data, err := topology.Marshal(*spec, topology.FormatYAML)
		if err != nil {
			return fmt.Errorf("snapshot: Encode: cluster: %w", err)
		}
		var sn yaml.Node
		if err := yaml.Unmarshal(data, &sn); err != nil {
			return fmt.Errorf("snapshot: Encode: cluster: %w", err)
		}
		if cl := mapValue(root, "cluster"); cl != nil && len(sn.Content) > 0 {
			cl.Style = 0
			cl.Content = append(cl.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "spec"}, sn.Content[0])
		}
	}
	if comment != "" {
		root.HeadComment = comment
	}
	sum := &sealer{w: w, crc: crc32.New(castagnoli)}
	bw := bufio.NewWriter(sum)
	if err := emit(bw, root); err != nil {
		return err
	}
	if len(jobs) == 0 {
		bw.WriteString("jobs: []\n")
	} else {
		bw.WriteString("jobs:\n")
	}
	var buf bytes.Buffer
	for from := 0; from < len(jobs); from += jobBatch {
		n, err := node(jobs[from:min(from+jobBatch, len(jobs))])
		if err != nil {
			return err
		}
		buf.Reset()
		if err := emit(&buf, n); err != nil {
			return err
		}
		// The batch's items as items of the jobs list.
		for _, line := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
			if len(line) > 0 {
				bw.WriteString("  ")
				bw.Write(line)
			}
		}
	}
	if len(notes) > 0 {
		n, err := node(&struct {
			Notes []string `yaml:"notes"`
		}{notes})
		if err != nil {
			return err
		}
		if err := emit(bw, n); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("snapshot: Encode: %w", err)
	}
	s := seal{Bytes: sum.bytes, CRC32C: sum.crc.Sum32(), Counts: sealCounted(st)}
	if _, err := io.WriteString(w, s.line()); err != nil {
		return fmt.Errorf("snapshot: Encode: %w", err)
	}
	return nil
}

// jobBatch is how many jobs Encode encodes as one YAML document.
const jobBatch = 64

// node encodes v as a YAML node, styled (see style).
func node(v any) (*yaml.Node, error) {
	var doc yaml.Node
	if err := doc.Encode(v); err != nil {
		return nil, fmt.Errorf("snapshot: Encode: %w", err)
	}
	n := &doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	style(n, "")
	return n, nil
}

// emit writes n as YAML, with two-space indentation.
func emit(w io.Writer, n *yaml.Node) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return fmt.Errorf("snapshot: Encode: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("snapshot: Encode: %w", err)
	}
	return nil
}

// flowItems are the keys whose list items are written on one line each;
// flowLists the keys whose whole list is.
var (
	flowItems = map[string]bool{"health": true, "placement": true, "quotas": true, "workload": true, "priorityClasses": true}
	flowLists = map[string]bool{"groups": true, "topology": true, "gpus": true, "models": true}
	flowMaps  = map[string]bool{"policy": true, "fairness": true}
	// durations are the keys whose values are time.Durations.
	durations = map[string]bool{"defaultRuntime": true, "runtime": true, "minRunTime": true, "checkpointInterval": true,
		"progress": true, "agingInterval": true, "halfLife": true}
)

// style sets the flow styles and shortens the durations of the state's
// nodes (not of an inline cluster, which has its own).
func style(n *yaml.Node, key string) {
	switch n.Kind {
	case yaml.MappingNode:
		if flowMaps[key] {
			n.Style = yaml.FlowStyle
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			if k == "spec" && key == "cluster" {
				continue
			}
			if k == "root" && v.Kind == yaml.MappingNode && len(v.Content) >= 2 && v.Content[0].Value == "name" && v.Content[1].Value == "" {
				v.Content = v.Content[2:] // the root's default name
			}
			if durations[k] && v.Kind == yaml.ScalarNode {
				if d, err := time.ParseDuration(v.Value); err == nil {
					v.Value = FormatDuration(d)
				}
			}
			style(v, k)
		}
	case yaml.SequenceNode:
		if flowLists[key] {
			n.Style = yaml.FlowStyle
		}
		for _, item := range n.Content {
			if flowItems[key] {
				item.Style = yaml.FlowStyle
			}
			style(item, "")
		}
	}
}

// FormatDuration writes d as a state file does: as Go writes durations,
// without zero minutes and seconds (1h, 1h30m, 45s, 1h0m0.5s). Decode
// reads it back with time.ParseDuration.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
