package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusched/gpusched/topology"
)

// SpeedTable gives each GPU model a speed factor: its training throughput
// relative to the reference model on which the trace's durations count
// (a job on a model of factor 0.5 takes twice as long), by default and,
// optionally, per job class (a model's throughput depends on the network
// trained). Models it does not name run at factor 1. Read one with
// ReadSpeedTable; package sim/data embeds one built from Gavel's
// published measurements.
type SpeedTable struct {
	// Source says where the factors come from.
	Source string
	// Reference is the model of factor 1.
	Reference string
	// Models are the default factors by model name.
	Models map[string]float64
	// Classes are factors by class, then model; a model a class does not
	// name takes its default factor.
	Classes map[string]map[string]float64
}

// Factor returns model's factor for class ("" for the default).
func (t *SpeedTable) Factor(model, class string) float64 {
	if t == nil {
		return 1
	}
	if c, ok := t.Classes[class]; ok {
		if f, ok := c[model]; ok {
			return f
		}
	}
	if f, ok := t.Models[model]; ok {
		return f
	}
	return 1
}

// ErrSpeedTable is the sentinel every speed table error wraps.
var ErrSpeedTable = errors.New("bad GPU speed table")

// speedFile is the YAML form of a SpeedTable.
type speedFile struct {
	Source    string                        `yaml:"source"`
	Reference string                        `yaml:"reference"`
	Models    map[string]float64            `yaml:"models"`
	Classes   map[string]map[string]float64 `yaml:"classes"`
}

// ReadSpeedTable reads a speed table in YAML:
//
//	source: where the numbers come from
//	reference: V100
//	models: {K80: 0.265, P100: 0.792, V100: 1}
//	classes:
//	  resnet50: {K80: 0.141, P100: 0.596}
//
// Factors must be positive and finite; unknown fields are errors. Errors
// name file, line and field.
func ReadSpeedTable(r io.Reader, file string) (*SpeedTable, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", file, ErrSpeedTable, err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: %w: empty", file, ErrSpeedTable)
	}
	// Check the factors where they are written, for their lines.
	var check func(n *yaml.Node, path string) error
	check = func(n *yaml.Node, path string) error {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if v.Kind == yaml.MappingNode {
				if err := check(v, p); err != nil {
					return err
				}
				continue
			}
			if path == "" {
				continue // source, reference
			}
			var x float64
			if err := v.Decode(&x); err != nil || !(x > 0) || math.IsInf(x, 0) {
				return fmt.Errorf("%s:%d: %w: %s: %q is not a positive speed factor", file, v.Line, ErrSpeedTable, p, v.Value)
			}
		}
		return nil
	}
	if err := check(root.Content[0], ""); err != nil {
		return nil, err
	}
	var f speedFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", file, ErrSpeedTable, err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: %w: empty", file, ErrSpeedTable)
	}
	if len(f.Models) == 0 && len(f.Classes) == 0 {
		return nil, fmt.Errorf("%s: %w: no models and no classes", file, ErrSpeedTable)
	}
	if f.Reference != "" {
		if x, ok := f.Models[f.Reference]; ok && x != 1 {
			return nil, fmt.Errorf("%s: %w: models.%s: the reference model's factor is %g, not 1", file, ErrSpeedTable, f.Reference, x)
		}
	}
	return &SpeedTable{Source: f.Source, Reference: f.Reference, Models: f.Models, Classes: f.Classes}, nil
}

// modelFactors returns class's factor ("" for the default) of each of
// the cluster's models by ModelID.
func (t *SpeedTable) modelFactors(models []topology.Accelerator, class string) []float64 {
	out := make([]float64, len(models))
	for i := range models {
		m := models[i].Model
		if base, _, ok := strings.Cut(m, "@"); ok {
			m = base // a hard partition's copy (HardPartition) runs as its model
		}
		out[i] = t.Factor(m, class)
	}
	return out
}

// ClassNames returns the table's classes (job types), sorted.
func (t *SpeedTable) ClassNames() []string {
	if t == nil {
		return nil
	}
	out := make([]string, 0, len(t.Classes))
	for c := range t.Classes {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// HasClass reports whether the table names class.
func (t *SpeedTable) HasClass(class string) bool {
	if t == nil {
		return false
	}
	_, ok := t.Classes[class]
	return ok
}

// Throughputs returns class's factor on each of models, in order: the
// per-model throughputs fairshare.HeteroMaxMin takes for a job of that
// class (Gavel's allocator on the same table the simulator runs durations
// by).
func (t *SpeedTable) Throughputs(class string, models []string) []float64 {
	out := make([]float64, len(models))
	for i, m := range models {
		out[i] = t.Factor(m, class)
	}
	return out
}
