package topology

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// This file reads and writes cluster files: a Spec as YAML or JSON.
//
// Reading goes through a yaml.v3 node tree (JSON is converted to one by
// file_json.go), so every error can name the line and column it comes from:
// syntax errors, unknown or duplicate keys, values of the wrong type, and
// the *SpecError that Build returns, whose field path is looked up in the
// tree again.

// Format is the syntax of a cluster file.
type Format uint8

// Cluster file formats.
const (
	// FormatAuto picks the format from the file name's extension (.yaml,
	// .yml, .json) or, failing that, from the content: a document whose
	// first non-blank character is '{' is JSON, anything else YAML.
	// Writers treat FormatAuto as FormatYAML.
	FormatAuto Format = iota
	// FormatYAML is YAML 1.2 as gopkg.in/yaml.v3 reads it. Anchors,
	// aliases and merge keys ("<<") are allowed; integers are decimal
	// (a leading zero does not make them octal).
	FormatYAML
	// FormatJSON is strict JSON (RFC 8259).
	FormatJSON
)

var formatNames = [...]string{"auto", "yaml", "json"}

// String returns "auto", "yaml" or "json".
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// ParseFormat parses "auto", "yaml", "yml" or "json" (any case).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return FormatAuto, nil
	case "yaml", "yml":
		return FormatYAML, nil
	case "json":
		return FormatJSON, nil
	}
	return FormatAuto, fmt.Errorf("topology: unknown format %q (want yaml or json)", s)
}

// FormatOf returns the format a file name's extension implies: FormatJSON
// for .json, FormatYAML for .yaml and .yml, else FormatAuto.
func FormatOf(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		return FormatJSON
	case ".yaml", ".yml":
		return FormatYAML
	}
	return FormatAuto
}

// Limits on what a cluster file may ask for, so that a hostile or mistyped
// file fails with an error instead of exhausting memory. They are far above
// any real cluster (the largest preset has 12,500 hosts and 100,000 GPUs;
// a Cluster takes about 800 bytes per GPU). Build, called from code, has no
// such limits.
const (
	// MaxFileBytes bounds the size of a cluster file.
	MaxFileBytes = 32 << 20
	// MaxFileHosts bounds the number of hosts a file may declare.
	MaxFileHosts = 1 << 18
	// MaxFileGPUs bounds the number of GPUs a file may declare.
	MaxFileGPUs = 1 << 20
	// MaxFileNames bounds the number of names all the name patterns of a
	// file expand to together (hosts, switches, parents, fabric domains).
	MaxFileNames = 1 << 22
	// MaxFileNameBytes bounds the total length of those names.
	MaxFileNameBytes = 1 << 27
	// maxFileDepth bounds the nesting of a document (PCIe switch trees are
	// the only recursive part of a Spec; Build allows MaxPCIeDepth).
	maxFileDepth = 64
)

// FileError reports a problem in a cluster file: where it is (file name,
// 1-based line and column; Column is 0 when the parser did not say), the
// field it concerns (Path, in the notation of SpecError; empty for syntax
// errors) and what is wrong.
//
// A FileError unwraps to the *SpecError that Build returned, when there was
// one, and in any case to ErrInvalidSpec.
type FileError struct {
	File   string // as given to the loader; may be empty
	Line   int    // 1-based; every FileError has a line
	Column int    // 1-based; 0 when unknown
	Path   string // field path such as "hosts[2].template"; may be empty
	Msg    string
	Err    error // the *SpecError from Build, or nil
}

// Error returns "FILE:LINE:COLUMN: PATH: MSG", leaving out the parts that
// are empty.
func (e *FileError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	} else {
		b.WriteString("line ")
	}
	b.WriteString(strconv.Itoa(e.Line))
	if e.Column > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Column))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the *SpecError behind e, if any, else ErrInvalidSpec.
func (e *FileError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return ErrInvalidSpec
}

// LoadFile reads and builds the cluster file at path. The format comes from
// the extension (see FormatOf), or from the content when the extension says
// nothing. Errors in the file are *FileError values naming path, line,
// column and field; I/O errors are returned as they are.
func LoadFile(path string) (*Cluster, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readLimited(f, path)
	if err != nil {
		return nil, err
	}
	return Load(data, path, FormatOf(path))
}

// Load decodes a cluster file held in data and builds it. name is used in
// error messages only (a file name, or "" for none). Every problem with the
// content, from a syntax error to a duplicate host name, is a *FileError
// with its line, column and field path. Complexity: linear in the size of
// data plus the cost of Build. Load and the other functions of this file
// are safe for concurrent use.
func Load(data []byte, name string, format Format) (*Cluster, error) {
	d, s, err := parse(data, name, format)
	if err != nil {
		return nil, err
	}
	c, err := Build(s)
	if err != nil {
		return nil, d.fromBuild(err)
	}
	return c, nil
}

// ParseSpec decodes a cluster file held in data into a Spec without
// building it: it checks the syntax, the version, field names, value types
// and the size limits (MaxFileHosts and so on), but not what Build checks
// (references, duplicates, ranges). Use Load to have Build's findings
// located in the file too. name is used in error messages only.
func ParseSpec(data []byte, name string, format Format) (Spec, error) {
	_, s, err := parse(data, name, format)
	return s, err
}

// LoadReader reads a cluster file from r (at most MaxFileBytes) and loads
// it as Load does.
func LoadReader(r io.Reader, name string, format Format) (*Cluster, error) {
	data, err := readLimited(r, name)
	if err != nil {
		return nil, err
	}
	return Load(data, name, format)
}

// Decode reads a cluster file from r (at most MaxFileBytes) and decodes it
// as ParseSpec does.
func Decode(r io.Reader, name string, format Format) (Spec, error) {
	data, err := readLimited(r, name)
	if err != nil {
		return Spec{}, err
	}
	return ParseSpec(data, name, format)
}

func readLimited(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, &FileError{File: name, Line: 1, Column: 1, Msg: fmt.Sprintf("file larger than %d MiB", MaxFileBytes>>20)}
	}
	return data, nil
}

// Encode writes s to w as Marshal formats it.
func Encode(w io.Writer, s Spec, format Format) error {
	b, err := Marshal(s, format)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// SaveFile writes the spec of c (Cluster.Spec) to path, as JSON when the
// name ends in .json and as YAML otherwise. It writes a temporary file
// beside path and renames it, so readers never see half a file. LoadFile
// of the result builds a cluster whose Spec equals c.Spec().
func SaveFile(path string, c *Cluster) error {
	b, err := Marshal(c.Spec(), FormatOf(path))
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// document is a parsed cluster file: its top-level mapping and what error
// messages need.
type document struct {
	name string
	root *yaml.Node
}

// parse turns data into a Spec, checking syntax, version, fields, types
// and size limits.
func parse(data []byte, name string, format Format) (*document, Spec, error) {
	d := &document{name: name}
	if len(data) > MaxFileBytes {
		return nil, Spec{}, d.errAtLine(1, 1, "", fmt.Sprintf("file larger than %d MiB", MaxFileBytes>>20))
	}
	if format == FormatAuto {
		format = sniff(data)
	}
	var err error
	switch format {
	case FormatJSON:
		d.root, err = d.parseJSON(data)
	case FormatYAML:
		d.root, err = d.parseYAML(data)
	default:
		return nil, Spec{}, fmt.Errorf("topology: unknown format %v", format)
	}
	if err != nil {
		return nil, Spec{}, err
	}
	if err := d.checkVersion(); err != nil {
		return nil, Spec{}, err
	}
	dec := &decoder{doc: d, budget: 4*len(data) + 100_000, fields: map[reflect.Type][]field{}}
	var s Spec
	if err := dec.decode(d.root, &s); err != nil {
		return nil, Spec{}, err
	}
	if err := d.checkSize(&s); err != nil {
		return nil, Spec{}, err
	}
	return d, s, nil
}

// sniff says JSON when the first non-blank character is '{'.
func sniff(data []byte) Format {
	data = bytes.TrimPrefix(data, utf8BOM)
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) > 0 && data[0] == '{' {
		return FormatJSON
	}
	return FormatYAML
}

var utf8BOM = []byte("\xef\xbb\xbf")

func (d *document) errAtLine(line, col int, path, msg string) *FileError {
	return &FileError{File: d.name, Line: max(line, 1), Column: max(col, 0), Path: path, Msg: msg}
}

func (d *document) errAt(n *yaml.Node, path, format string, args ...any) *FileError {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, n.Column
	}
	return d.errAtLine(line, col, path, fmt.Sprintf(format, args...))
}

// parseYAML parses one YAML document whose top level is a mapping.
func (d *document) parseYAML(data []byte) (*yaml.Node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, d.errAtLine(1, 1, "", "empty cluster file")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, d.errAtLine(1, 1, "", "no YAML document in the cluster file (only comments?)")
		}
		return nil, d.yamlSyntaxError(data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, d.errAt(&extra, "", "more than one YAML document in the cluster file")
	case err != io.EOF:
		return nil, d.yamlSyntaxError(data, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, d.errAtLine(1, 1, "", "no YAML document in the cluster file")
	}
	root := doc.Content[0]
	if root.Kind == yaml.AliasNode {
		root = root.Alias
	}
	if root.Kind != yaml.MappingNode {
		return nil, d.errAt(root, "", "the cluster file must be a mapping (version: 1, name: …), not %s", describe(root))
	}
	return root, nil
}

// yamlSyntaxError turns a yaml.v3 parse error ("yaml: line 3: did not find
// expected key") into a FileError. yaml.v3 leaves out the line when the
// problem is on the first line, and gives none for bad characters; those
// are found here.
func (d *document) yamlSyntaxError(data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, after, ok := strings.Cut(rest, ": "); ok {
			if v, perr := strconv.Atoi(num); perr == nil && v > 0 {
				line, msg = v, after
			}
		}
	}
	col := 0
	switch {
	case strings.Contains(msg, "UTF-8") || strings.Contains(msg, "control characters") || strings.Contains(msg, "invalid Unicode"):
		if off := badCharOffset(data); off >= 0 {
			line, col = lineCol(data, off)
		}
	case strings.HasPrefix(msg, "unknown anchor '"):
		name, _, _ := strings.Cut(strings.TrimPrefix(msg, "unknown anchor '"), "'")
		if off := bytes.Index(data, []byte("*"+name)); off >= 0 {
			line, col = lineCol(data, off)
		}
	default:
		// yaml.v3 names the line where the enclosing block starts, not
		// the line of the problem. Find the latter: the shortest run of
		// whole lines that fails with the same message.
		if p := problemLine(data, msg); p > line {
			msg = fmt.Sprintf("%s (in the block that starts on line %d)", msg, line)
			line = p
		}
	}
	return d.errAtLine(line, col, "", msg)
}

// problemLine returns the first line L such that the first L lines of data
// fail to parse with message msg, found by bisection (0 if none, or if the
// file is too large to search).
func problemLine(data []byte, msg string) int {
	const maxSearch = 1 << 20
	if len(data) > maxSearch {
		return 0
	}
	var ends []int // ends[i] = offset just after line i+1
	for off := 0; off < len(data); {
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			ends = append(ends, len(data))
			break
		}
		off += nl + 1
		ends = append(ends, off)
	}
	fails := func(n int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(data[:ends[n-1]]))
		for {
			var node yaml.Node
			err := dec.Decode(&node)
			if err == io.EOF {
				return false
			}
			if err != nil {
				m := strings.TrimPrefix(err.Error(), "yaml: ")
				if rest, ok := strings.CutPrefix(m, "line "); ok {
					_, m, _ = strings.Cut(rest, ": ")
				}
				return m == msg
			}
		}
	}
	lo, hi := 1, len(ends)
	if hi == 0 || !fails(hi) {
		return 0
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// badCharOffset returns the offset of the first byte that is not valid
// UTF-8 or is a character YAML does not allow, or -1.
func badCharOffset(data []byte) int {
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 {
			return off
		}
		ok := r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0x7E || r == 0x85 ||
			r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD && (r != 0xFEFF || off == 0) || r >= 0x10000 && r <= 0x10FFFF
		if !ok {
			return off
		}
		off += size
	}
	return -1
}

// lineCol returns the 1-based line and column (in characters) of offset off.
func lineCol(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return line, 1 + utf8.RuneCount(data[start:off])
}

// checkVersion requires "version: 1" before anything else is looked at, so
// that a file of another version gets that error and not a list of unknown
// fields.
func (d *document) checkVersion() error {
	n := d.lookup(d.root, "version")
	if n == nil {
		return d.errAt(d.root, "version", "missing; a cluster file starts with \"version: %d\"", SpecVersion)
	}
	var v int
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil {
		return d.errAt(n, "version", "want the integer %d, got %s", SpecVersion, describe(n))
	}
	if v != SpecVersion {
		return d.errAt(n, "version", "unsupported version %d; this build reads version %d", v, SpecVersion)
	}
	return nil
}

// checkSize enforces MaxFileHosts, MaxFileGPUs, MaxFileNames and
// MaxFileNameBytes before Build expands anything.
func (d *document) checkSize(s *Spec) error {
	var names, nameBytes int64
	add := func(path, pattern string) error {
		n := int64(countNames(pattern))
		if n > MaxExpandedNames {
			return d.errAt(d.locate(path), path, "name pattern %q expands to more than %d names", pattern, MaxExpandedNames)
		}
		names += n
		nameBytes += n * int64(len(pattern))
		if names > MaxFileNames || nameBytes > MaxFileNameBytes {
			return d.errAt(d.locate(path), path, "the name patterns of the file expand to too many names (limit %d names, %d MiB)", MaxFileNames, MaxFileNameBytes>>20)
		}
		return nil
	}
	gpusOf := make(map[string]int, len(s.Templates))
	var hosts, gpus int64
	// part checks one part of the file: its top level, or a live change
	// (prefix "live[i].").
	part := func(prefix string, templates []HostTemplate, switches []SwitchGroup, hostGroups []HostGroup, fabrics []FabricGroup) error {
		for i, g := range switches {
			p := prefix + "switches[" + strconv.Itoa(i) + "]"
			if err := add(p+".name", g.Name); err != nil {
				return err
			}
			if err := add(p+".parent", g.Parent); err != nil {
				return err
			}
		}
		for _, t := range templates {
			if _, dup := gpusOf[t.Name]; !dup {
				gpusOf[t.Name] = max(t.GPUs, 0)
			}
		}
		for i, g := range hostGroups {
			p := prefix + "hosts[" + strconv.Itoa(i) + "]"
			if err := add(p+".name", g.Name); err != nil {
				return err
			}
			if err := add(p+".parent", g.Parent); err != nil {
				return err
			}
			n := int64(countNames(g.Name))
			hosts += n
			gpus += n * int64(min(gpusOf[g.Template], MaxGPUsPerHost+1))
			if hosts > MaxFileHosts {
				return d.errAt(d.locate(p+".name"), p+".name", "more than %d hosts in the file", MaxFileHosts)
			}
			if gpus > MaxFileGPUs {
				return d.errAt(d.locate(p+".name"), p+".name", "more than %d GPUs in the file", MaxFileGPUs)
			}
		}
		for i, g := range fabrics {
			p := prefix + "fabrics[" + strconv.Itoa(i) + "]"
			if err := add(p+".name", g.Name); err != nil {
				return err
			}
			if err := add(p+".hosts", g.Hosts); err != nil {
				return err
			}
		}
		return nil
	}
	if err := part("", s.Templates, s.Switches, s.Hosts, s.Fabrics); err != nil {
		return err
	}
	for i := range s.Live {
		ch := &s.Live[i]
		if err := part("live["+strconv.Itoa(i)+"].", ch.Templates, ch.Switches, ch.Hosts, ch.Fabrics); err != nil {
			return err
		}
	}
	return nil
}

// countNames returns how many names ExpandNames makes of pattern, without
// making them: it reads the pattern with ExpandNames' own scanner
// (splitTopLevel, scanPart, eachRange) and only counts. More than
// MaxExpandedNames is reported as MaxExpandedNames+1, and a malformed
// pattern (which Build rejects) as 0.
func countNames(pattern string) int {
	if pattern == "" || strings.ContainsAny(pattern, " \t\n\r") {
		return 0
	}
	total := 0
	for _, part := range splitTopLevel(pattern) {
		if part == "" {
			return 0
		}
		n := 1
		_, err := scanPart(part, func(body string) error {
			k := 0
			err := eachRange(body, func(_, _ string, a, b int) error {
				if k += b - a + 1; k > MaxExpandedNames {
					return errTooManyNames
				}
				return nil
			})
			if err != nil {
				return err
			}
			if n *= k; n > MaxExpandedNames {
				return errTooManyNames
			}
			return nil
		})
		switch {
		case err == errTooManyNames:
			return MaxExpandedNames + 1
		case err != nil:
			return 0
		}
		if total += n; total > MaxExpandedNames {
			return MaxExpandedNames + 1
		}
	}
	return total
}

// errTooManyNames stops countNames at the first count over
// MaxExpandedNames.
var errTooManyNames = errors.New("too many names")

// fromBuild locates a *SpecError from Build in the file.
func (d *document) fromBuild(err error) error {
	var se *SpecError
	if !errors.As(err, &se) {
		return err
	}
	fe := d.errAt(d.locate(se.Path), se.Path, "%s", se.Msg)
	fe.Err = se
	return fe
}

// locate finds the node a field path such as "templates[2].numa[0].gpus[1]"
// names. Where the path leads to something the file does not spell out (a
// field left out), it returns the deepest node on the way.
func (d *document) locate(path string) *yaml.Node {
	n := d.root
	for path != "" {
		seg := path
		if i := strings.IndexByte(path, '.'); i >= 0 {
			seg, path = path[:i], path[i+1:]
		} else {
			path = ""
		}
		key, idx, _ := strings.Cut(seg, "[")
		k, next := d.lookupPair(n, key)
		if next == nil {
			return n
		}
		n = next
		if path == "" && idx == "" && deref(next).Kind != yaml.ScalarNode {
			// A whole list or mapping: point at its key, which is where
			// a block collection's line is.
			return k
		}
		for idx != "" {
			num, rest, _ := strings.Cut(idx, "]")
			idx = strings.TrimPrefix(rest, "[")
			i, err := strconv.Atoi(num)
			m := deref(n)
			if err != nil || m.Kind != yaml.SequenceNode || i < 0 || i >= len(m.Content) {
				return n
			}
			n = m.Content[i]
		}
	}
	return n
}

// lookup returns the value of key in mapping n (merge keys included), or
// nil.
func (d *document) lookup(n *yaml.Node, key string) *yaml.Node {
	_, v := d.lookupPair(n, key)
	return v
}

// lookupPair returns the key and value nodes of key in mapping n, or nils.
func (d *document) lookupPair(n *yaml.Node, key string) (k, v *yaml.Node) {
	budget := 1000
	_ = eachPair(deref(n), 0, &budget, func(kn, vn *yaml.Node) error {
		if v == nil && deref(kn).Value == key {
			k, v = kn, vn
		}
		return nil
	})
	return k, v
}

func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

var errMergeBudget = errors.New("too many merged mappings")

// eachPair calls f for each key and value of mapping n: first its own
// pairs, then those merged in with "<<" (earlier merges first), so the
// first pair seen for a key is the one that counts. It does nothing when n
// is not a mapping.
func eachPair(n *yaml.Node, depth int, budget *int, f func(k, v *yaml.Node) error) error {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if err := f(k, v); err != nil {
			return err
		}
	}
	if len(merges) == 0 {
		return nil
	}
	if depth > maxFileDepth {
		return errMergeBudget
	}
	for _, m := range merges {
		m = deref(m)
		srcs := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		for _, src := range srcs {
			*budget--
			if *budget < 0 {
				return errMergeBudget
			}
			if err := eachPair(deref(src), depth+1, budget, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// describe names the kind of a node for messages: "a mapping", "a list",
// "the string \"abc\"", "the number 3".
func describe(n *yaml.Node) string {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		switch n.ShortTag() {
		case "!!int", "!!float":
			return "the number " + v
		case "!!bool":
			return "the boolean " + v
		case "!!null":
			return "null"
		}
		return "the string " + strconv.Quote(v)
	}
	return "nothing"
}
