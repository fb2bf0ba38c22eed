package topology

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the node-list reader and the two cluster presets built
// from the Alibaba GPU cluster trace (cluster-trace-gpu-v2023, Weng et al.,
// USENIX ATC'23 "Beware of Fragmentation"), whose node lists are embedded:
//
//	openb      the whole cluster: 1,523 nodes, 310 of them without GPUs
//	openb-gpu  its 1,213 GPU nodes with 6,212 GPUs, the cluster of the
//	           paper's experiments
//
// The trace gives no network or intra-host topology, so these clusters have
// no network levels and every host has the implicit layout of a
// HostTemplate without NUMA nodes. See data/README.md for the source.

//go:embed data/openb_node_list_all_node.csv
var openbAllNodes []byte

//go:embed data/openb_node_list_gpu_node.csv
var openbGPUNodes []byte

// extraPreset resolves the cluster presets built from bundled data (openb).
func extraPreset(name string) (Spec, bool, error) {
	switch name {
	case "openb":
		s, err := ParseNodeList(bytes.NewReader(openbAllNodes), name)
		return s, true, err
	case "openb-gpu":
		s, err := ParseNodeList(bytes.NewReader(openbGPUNodes), name)
		return s, true, err
	}
	return Spec{}, false, nil
}

func extraPresetNames() []string { return []string{"openb", "openb-gpu"} }

// nodeListAccelerators are the GPU models of the Alibaba trace. G2 and G3
// are undisclosed internal codes, so nothing is known about them; memory of
// the NVIDIA models is what NVML reports as total memory for the usual
// data-centre SKU (P100-PCIE-16GB, T4, V100-SXM2-16GB, V100-SXM2-32GB, A10).
var nodeListAccelerators = []AcceleratorSpec{
	{Model: "P100", Vendor: "nvidia", MemoryMiB: 16280, ComputeCapability: "6.0"},
	{Model: "T4", Vendor: "nvidia", MemoryMiB: 15360, ComputeCapability: "7.5"},
	{Model: "V100M16", Vendor: "nvidia", MemoryMiB: 16160, ComputeCapability: "7.0"},
	{Model: "V100M32", Vendor: "nvidia", MemoryMiB: 32510, ComputeCapability: "7.0"},
	{Model: "A10", Vendor: "nvidia", MemoryMiB: 23028, ComputeCapability: "8.6"},
	{Model: "G2"},
	{Model: "G3"},
}

// ErrInvalidNodeList is the sentinel every *NodeListError unwraps to.
var ErrInvalidNodeList = errors.New("invalid node list")

// NodeListError reports a problem at one place of a node-list CSV.
type NodeListError struct {
	// Line is the 1-based line of the problem.
	Line int
	// Column is the 1-based byte column where the offending field starts
	// (or where the CSV syntax error is); 0 when the whole record or file
	// is at fault.
	Column int
	// Field is the header name of the offending column ("cpu_milli");
	// empty when the problem is not about one column.
	Field string
	// Msg says what is wrong.
	Msg string
}

// Error returns "line L, column C (FIELD): MSG", leaving out what is unknown.
func (e *NodeListError) Error() string {
	var b strings.Builder
	b.WriteString("line ")
	b.WriteString(strconv.Itoa(e.Line))
	if e.Column > 0 {
		b.WriteString(", column ")
		b.WriteString(strconv.Itoa(e.Column))
	}
	if e.Field != "" {
		b.WriteString(" (")
		b.WriteString(e.Field)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrInvalidNodeList.
func (e *NodeListError) Unwrap() error { return ErrInvalidNodeList }

// The columns of a node list, in the order of the Alibaba trace.
const (
	colName = iota
	colCPU
	colMemory
	colGPU
	colModel
	nodeListColumns
)

var nodeListHeader = [nodeListColumns]string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}

// MaxNodeListNodes bounds the number of nodes ParseNodeList accepts.
const MaxNodeListNodes = 1 << 20

// ParseNodeList reads a node list in the CSV form of the Alibaba GPU trace
// and returns a Spec of the cluster it describes, named name (empty means
// "cluster").
//
// The first record is a header naming the columns sn (node name),
// cpu_milli (allocatable CPU in milli-cores), memory_mib (memory in MiB),
// gpu (number of GPUs) and model (GPU model; empty, or "nan", for nodes
// without GPUs), in any order; other columns are ignored. Every following
// record is one node. Values are checked strictly: names must be unique and
// free of white space, control characters, '/', '[' and ']'; numbers are
// plain decimal integers within the limits Build enforces; a node has a
// model if and only if it has GPUs.
//
// The spec has one host template per distinct (CPU, memory, GPU count,
// model) shape, in order of first appearance, with the implicit intra-host
// layout (no NUMA or PCIe detail, no fabric); one accelerator per model, in
// order of first appearance, described from a table of the trace's models
// (P100, T4, V100M16, V100M32, A10, G2, G3) or with only its name when
// unknown; no network levels; and host groups that keep the nodes' names
// and order, runs of consecutively numbered names of one shape folded into
// ranges such as "openb-node-[0227-0230]".
//
// Bad input yields a *NodeListError naming the line, column and field; an
// invalid name a *SpecError. Complexity O(nodes).
func ParseNodeList(r io.Reader, name string) (Spec, error) {
	if name == "" {
		name = "cluster"
	}
	if strings.ContainsAny(name, " \t\n/") {
		return Spec{}, specErr("name", "cluster name %q may not contain white space or '/'", name)
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true

	header, err := cr.Read()
	if err == io.EOF {
		return Spec{}, &NodeListError{Line: 1, Msg: "empty input; want a header " + strings.Join(nodeListHeader[:], ",")}
	}
	if err != nil {
		return Spec{}, csvError(err)
	}
	headerLine, _ := cr.FieldPos(0)
	var col [nodeListColumns]int
	for i := range col {
		col[i] = -1
	}
	nFields := len(header)
	for i, h := range header {
		if i == 0 {
			h = strings.TrimPrefix(h, "\uFEFF") // a byte-order mark
		}
		for k, want := range nodeListHeader {
			if h != want {
				continue
			}
			if col[k] >= 0 {
				line, column := cr.FieldPos(i)
				return Spec{}, &NodeListError{Line: line, Column: column, Field: want, Msg: "duplicate column " + strconv.Quote(want)}
			}
			col[k] = i
		}
	}
	for k, c := range col {
		if c < 0 {
			return Spec{}, &NodeListError{Line: headerLine, Msg: fmt.Sprintf("header lacks column %q (want %s)", nodeListHeader[k], strings.Join(nodeListHeader[:], ","))}
		}
	}

	p := nodeListParser{spec: Spec{Version: SpecVersion, Name: name}, names: map[string]int{}, templates: map[nodeShape]int{}, tmplNames: map[string]bool{}}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Spec{}, csvError(err)
		}
		if len(rec) != nFields {
			line, _ := cr.FieldPos(0)
			return Spec{}, &NodeListError{Line: line, Msg: fmt.Sprintf("record has %d fields; the header has %d", len(rec), nFields)}
		}
		if p.nodes == MaxNodeListNodes {
			line, _ := cr.FieldPos(0)
			return Spec{}, &NodeListError{Line: line, Msg: fmt.Sprintf("more than %d nodes", MaxNodeListNodes)}
		}
		if err := p.node(cr, rec, &col); err != nil {
			return Spec{}, err
		}
	}
	if p.nodes == 0 {
		return Spec{}, &NodeListError{Line: headerLine, Msg: "no nodes after the header"}
	}
	p.flush()
	return p.spec, nil
}

// csvError turns an encoding/csv error into a *NodeListError.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &NodeListError{Line: pe.Line, Column: pe.Column, Msg: pe.Err.Error()}
	}
	return err // an I/O error of the reader
}

type nodeShape struct {
	cpu, mem int64
	gpus     int
	model    string
}

type nodeListParser struct {
	spec      Spec
	nodes     int
	names     map[string]int // node name → line
	templates map[nodeShape]int
	tmplNames map[string]bool

	// The open run of consecutively numbered nodes of one template.
	run struct {
		open   bool
		tmpl   int
		first  string // the first name, used as is for a run of one
		prefix string
		width  int // zero padding of the numbers, 0 for none
		lo, hi int
	}
}

func (p *nodeListParser) fieldErr(cr *csv.Reader, col *[nodeListColumns]int, k int, format string, args ...any) error {
	line, column := cr.FieldPos(col[k])
	return &NodeListError{Line: line, Column: column, Field: nodeListHeader[k], Msg: fmt.Sprintf(format, args...)}
}

func (p *nodeListParser) node(cr *csv.Reader, rec []string, col *[nodeListColumns]int) error {
	name := rec[col[colName]]
	if err := checkNodeName(name); err != nil {
		return p.fieldErr(cr, col, colName, "%v", err)
	}
	if name == p.spec.Name {
		return p.fieldErr(cr, col, colName, "node %q has the name of the cluster", name)
	}
	if prev, dup := p.names[name]; dup {
		return p.fieldErr(cr, col, colName, "duplicate node %q (first on line %d)", name, prev)
	}
	line, _ := cr.FieldPos(col[colName])
	p.names[name] = line

	var sh nodeShape
	var err error
	if sh.cpu, err = parseCount(rec[col[colCPU]], MaxCPUMilli); err != nil {
		return p.fieldErr(cr, col, colCPU, "%v", err)
	}
	if sh.mem, err = parseCount(rec[col[colMemory]], MaxMemoryMiB); err != nil {
		return p.fieldErr(cr, col, colMemory, "%v", err)
	}
	gpus, err := parseCount(rec[col[colGPU]], MaxGPUsPerHost)
	if err != nil {
		return p.fieldErr(cr, col, colGPU, "%v", err)
	}
	sh.gpus = int(gpus)
	sh.model = rec[col[colModel]]
	if strings.EqualFold(sh.model, "nan") {
		sh.model = ""
	}
	switch {
	case sh.gpus > 0 && sh.model == "":
		return p.fieldErr(cr, col, colModel, "a node with %d GPUs needs a model", sh.gpus)
	case sh.gpus == 0 && sh.model != "":
		return p.fieldErr(cr, col, colModel, "model %q given for a node without GPUs", sh.model)
	case sh.model != "":
		if err := checkModelName(sh.model); err != nil {
			return p.fieldErr(cr, col, colModel, "%v", err)
		}
	}
	p.add(name, p.template(sh))
	p.nodes++
	return nil
}

// checkNodeName accepts names that ExpandNames returns unchanged and that
// Build accepts as host names.
func checkNodeName(s string) error {
	if s == "" {
		return errors.New("empty node name")
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("node name %q is not valid UTF-8", s)
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return fmt.Errorf("node name %q contains white space or a control character", s)
		case r == '/' || r == '[' || r == ']' || r == ',':
			return fmt.Errorf("node name %q contains %q", s, r)
		}
	}
	return nil
}

func checkModelName(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("model %q is not valid UTF-8", s)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("model %q contains white space or a control character", s)
		}
	}
	return nil
}

// parseCount parses a plain decimal integer in [0, max].
func parseCount(s string, max int64) (int64, error) {
	if s == "" {
		return 0, errors.New("empty value; want a whole number")
	}
	if len(s) > 18 {
		return 0, fmt.Errorf("%q is too large (at most %d)", s, max)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a whole number", s)
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	if v > max {
		return 0, fmt.Errorf("%d out of range [0, %d]", v, max)
	}
	return v, nil
}

// template returns the index of the template of shape sh, adding the
// template (and its accelerator) on first use.
func (p *nodeListParser) template(sh nodeShape) int {
	if t, ok := p.templates[sh]; ok {
		return t
	}
	if sh.model != "" {
		known := false
		for _, a := range p.spec.Accelerators {
			if a.Model == sh.model {
				known = true
				break
			}
		}
		if !known {
			acc := AcceleratorSpec{Model: sh.model}
			for _, a := range nodeListAccelerators {
				if a.Model == sh.model {
					acc = a
					break
				}
			}
			p.spec.Accelerators = append(p.spec.Accelerators, acc)
		}
	}
	name := shapeName(sh)
	for i := 2; p.tmplNames[name]; i++ {
		name = shapeName(sh) + "-" + strconv.Itoa(i)
	}
	p.tmplNames[name] = true
	t := len(p.spec.Templates)
	p.spec.Templates = append(p.spec.Templates, HostTemplate{
		Name: name, CPUMilli: sh.cpu, MemoryMiB: sh.mem, Accelerator: sh.model, GPUs: sh.gpus,
	})
	p.templates[sh] = t
	return t
}

// shapeName names a template after its shape: "G2x8-96c-384Gi" for eight
// G2 GPUs, 96 cores and 384 GiB; "cpu-32c-256Gi" without GPUs. CPU that is
// not whole cores is written in milli-cores ("1500m"), memory that is not
// whole GiB in MiB ("1000Mi").
func shapeName(sh nodeShape) string {
	var b strings.Builder
	if sh.gpus > 0 {
		b.WriteString(sh.model)
		b.WriteString("x")
		b.WriteString(strconv.Itoa(sh.gpus))
	} else {
		b.WriteString("cpu")
	}
	b.WriteString("-")
	if sh.cpu%1000 == 0 {
		b.WriteString(strconv.FormatInt(sh.cpu/1000, 10) + "c")
	} else {
		b.WriteString(strconv.FormatInt(sh.cpu, 10) + "m")
	}
	b.WriteString("-")
	if sh.mem%1024 == 0 {
		b.WriteString(strconv.FormatInt(sh.mem/1024, 10) + "Gi")
	} else {
		b.WriteString(strconv.FormatInt(sh.mem, 10) + "Mi")
	}
	return b.String()
}

// maxRangeNumber is the largest number a name range may hold (ExpandNames
// reads at most nine digits).
const maxRangeNumber = 999_999_999

// add appends node name of template t, extending the open run when name is
// the next number in it.
func (p *nodeListParser) add(name string, t int) {
	prefix, digits := splitNumber(name)
	r := &p.run
	if r.open && t == r.tmpl && r.lo >= 0 && digits != "" && prefix == r.prefix && r.hi < maxRangeNumber &&
		name == prefix+padNumber(r.hi+1, r.width) {
		r.hi++
		return
	}
	p.flush()
	r.open, r.tmpl, r.first, r.prefix = true, t, name, prefix
	r.lo, r.hi, r.width = -1, -1, 0
	if digits != "" {
		n, _ := strconv.Atoi(digits) // at most nine digits
		r.lo, r.hi = n, n
		if len(digits) > 1 && digits[0] == '0' {
			r.width = len(digits)
		}
	}
}

// flush closes the open run into a host group.
func (p *nodeListParser) flush() {
	r := &p.run
	if !r.open {
		return
	}
	g := HostGroup{Name: r.first, Template: p.spec.Templates[r.tmpl].Name}
	if r.hi > r.lo {
		g.Name = r.prefix + "[" + padNumber(r.lo, r.width) + "-" + padNumber(r.hi, r.width) + "]"
	}
	p.spec.Hosts = append(p.spec.Hosts, g)
	r.open = false
}

// splitNumber splits a name into a prefix and its trailing decimal digits
// (at most nine; none when the name has more or none).
func splitNumber(name string) (prefix, digits string) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if d := len(name) - i; d == 0 || d > 9 {
		return name, ""
	}
	return name[:i], name[i:]
}

func padNumber(n, width int) string {
	s := strconv.Itoa(n)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}
