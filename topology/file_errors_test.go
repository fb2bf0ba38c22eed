package topology

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad-file case. In YAML cases the line that the error must name ends in
// the marker "#!"; JSON cases give the line (and column) explicitly.
type badFile struct {
	name   string
	format Format
	text   string
	line   int    // for JSON; YAML uses the #! marker; -1: any line
	col    int    // checked when non-zero
	path   string // the FileError's Path; "x*" matches any path starting with x
	msg    string // a substring of the message
}

// header is the valid start of most YAML cases: lines 1-11.
const header = `version: 1
name: t
levels:
  - name: tor
accelerators:
  - model: H100
templates:
  - name: box
    accelerator: H100
    gpus: 2
    numa: [{id: 0, pcie: [{switches: [{gpus: [0, 1]}]}]}]
`

var badFiles = []badFile{
	{name: "duplicate host names", text: header + `switches:
  - {name: tor1, level: tor}
hosts:
  - {name: "h[1-4]", template: box, parent: tor1}
  - name: h4 #!
    template: box
    parent: tor1
`, path: "hosts[1].name", msg: `duplicate host "h4"`},

	{name: "unknown template", text: header + `switches:
  - {name: tor1, level: tor}
hosts:
  - name: h1
    template: bx #!
    parent: tor1
`, path: "hosts[0].template", msg: `unknown template "bx"`},

	{name: "GPU in two fabric domains", text: `version: 1
templates:
  - name: box
    accelerator: H100
    gpus: 4
    fabrics:
      - {kind: nvlink, gpus: [0, 1]}
      - kind: nvlink
        gpus: [2, 1] #!
accelerators: [{model: H100}]
hosts: [{name: h, template: box}]
`, path: "templates[0].fabrics[1].gpus[1]", msg: "GPU 1 is already in fabric domain nvlink0"},

	{name: "GPU in two PCIe positions", text: `version: 1
accelerators: [{model: H100}]
templates:
  - name: box
    accelerator: H100
    gpus: 2
    numa:
      - id: 0
        pcie:
          - gpus: [0, 1]
          - switches:
              - gpus: [1] #!
hosts: [{name: h, template: box}]
`, path: "templates[0].numa[0].pcie[1].switches[0].gpus[0]", msg: "GPU 1 is already placed at templates[0].numa[0].pcie[0].gpus[1]"},

	{name: "GPU in no PCIe position", text: `version: 1
accelerators: [{model: H100}]
templates:
  - name: box
    accelerator: H100
    gpus: 3
    numa: #!
      - {id: 0, pcie: [{gpus: [0, 1]}]}
hosts: [{name: h, template: box}]
`, path: "templates[0].numa", msg: "GPU 2 appears in no PCIe position"},

	{name: "switch that is its own parent", text: `version: 1
levels: [{name: spine}, {name: tor}]
accelerators: [{model: H100}]
templates: [{name: box, accelerator: H100, gpus: 1}]
switches:
  - {name: s1, level: spine}
  - name: t1
    level: tor
    parent: t1 #!
hosts: [{name: h, template: box, parent: t1}]
`, path: "switches[1].parent", msg: "its own parent (a cycle)"},

	{name: "negative CPU", text: `version: 1
templates:
  - name: box
    cpuMilli: -5 #!
    gpus: 0
hosts: [{name: h, template: box}]
`, path: "templates[0].cpuMilli", msg: "CPU -5 milli-cores out of range"},

	{name: "absurd GPU count", text: `version: 1
accelerators: [{model: H100}]
templates:
  - {name: box, accelerator: H100, gpus: 100000} #!
hosts: [{name: h, template: box}]
`, path: "templates[0].gpus", msg: "100000 GPUs out of range [0, 256]"},

	{name: "absurd memory", text: `version: 1
templates:
  - name: box
    memoryMiB: 99999999999999999 #!
hosts: [{name: h, template: box}]
`, path: "templates[0].memoryMiB", msg: "out of range"},

	{name: "integer overflow", text: `version: 1
templates:
  - name: box
    memoryMiB: 99999999999999999999999 #!
hosts: [{name: h, template: box}]
`, path: "templates[0].memoryMiB", msg: "99999999999999999999999 is out of range for this field: want an integer from -9223372036854775808 to 9223372036854775807"},

	{name: "cpuMilli beyond int64", text: `version: 1
templates:
  - name: box
    cpuMilli: 99999999999999999999 #!
hosts: [{name: h, template: box}]
`, path: "templates[0].cpuMilli", msg: "99999999999999999999 is out of range for this field: want an integer from -9223372036854775808 to 9223372036854775807"},

	{name: "huge negative integer", text: `version: 1
templates:
  - name: box
    gpus: -99999999999999999999999999999999999999999999999999 #!
`, path: "templates[0].gpus", msg: "-999999999999999999999999999999999999... is out of range for this field"},

	{name: "cliqueID beyond uint32", text: `version: 1
fabrics:
  - name: f
    cliqueID: 99999999999 #!
`, path: "fabrics[0].cliqueID", msg: "99999999999 is out of range for this field: want an integer from 0 to 4294967295"},

	{name: "hex cliqueID beyond uint64", text: `version: 1
fabrics:
  - name: f
    cliqueID: 0x1ffffffffffffffffffff #!
`, path: "fabrics[0].cliqueID", msg: "0x1ffffffffffffffffffff is out of range for this field: want an integer from 0 to 4294967295"},

	{name: "quoted big integer is a string", text: `version: 1
fabrics:
  - name: f
    cliqueID: "99999999999" #!
`, path: "fabrics[0].cliqueID", msg: `want a non-negative integer, got the string "99999999999"`},

	{name: "tagged big integer is a string", text: `version: 1
fabrics:
  - name: f
    cliqueID: !!str 99999999999 #!
`, path: "fabrics[0].cliqueID", msg: `want a non-negative integer, got the string "99999999999"`},

	{name: "bandwidth beyond float64", text: `version: 1
levels:
  - name: tor
    bandwidthGBps: 1e400 #!
`, path: "levels[0].bandwidthGBps", msg: "1e400 is out of range for this field: want a number of magnitude at most 1.7976931348623157e+308"},

	{name: "negative perParent", text: header + `switches:
  - {name: tor1, level: tor}
hosts:
  - name: h1
    template: box
    parent: tor1
    perParent: -1 #!
`, path: "hosts[0].perParent", msg: "negative count -1"},

	{name: "unknown level", text: header + `switches:
  - name: tor1
    level: leaf #!
hosts: [{name: h1, template: box, parent: tor1}]
`, path: "switches[0].level", msg: `unknown level "leaf"`},

	{name: "wrong version", text: `version: 2 #!
templates: []
`, path: "version", msg: "unsupported version 2; this build reads version 1"},

	{name: "version not a number", text: `name: x
version: one #!
`, path: "version", msg: `want the integer 1, got the string "one"`},

	{name: "missing version", text: `name: x #!
templates: [{name: box}]
`, path: "version", msg: `missing; a cluster file starts with "version: 1"`},

	{name: "unknown field with suggestion", text: `version: 1
templates:
  - name: box
    cpumilli: 1000 #!
hosts: [{name: h, template: box}]
`, path: "templates[0].cpumilli", msg: `unknown field "cpumilli"; did you mean "cpuMilli"?`},

	{name: "unknown field", text: `version: 1
templates: [{name: box}]
hosts: [{name: h, template: box}]
owner: me #!
`, path: "owner", msg: `unknown field "owner" (known keys: version, name, levels,`},

	{name: "type error: string for int", text: `version: 1
templates:
  - name: box
    gpus: eight #!
hosts: [{name: h, template: box}]
`, path: "templates[0].gpus", msg: `want an integer, got the string "eight"`},

	{name: "type error in a list", text: `version: 1
accelerators: [{model: H100}]
templates:
  - name: box
    accelerator: H100
    gpus: 2
    fabrics:
      - kind: nvlink
        gpus: [0,
          x] #!
hosts: [{name: h, template: box}]
`, path: "templates[0].fabrics[0].gpus[1]", msg: `want an integer, got the string "x"`},

	{name: "type error: mapping for list", text: `version: 1
templates: [{name: box}]
hosts:
  name: h #!
`, path: "hosts", msg: "want a list, got a mapping"},

	{name: "type error: list for mapping", text: `version: 1
accelerators:
  - model: A100
    mig: [1, 2] #!
templates: [{name: box}]
`, path: "accelerators[0].mig", msg: "want a mapping with keys slots, profiles, got a list"},

	{name: "type error: float for int", text: `version: 1
templates:
  - name: box
    gpus: 1.5 #!
`, path: "templates[0].gpus", msg: "want an integer, got the number 1.5"},

	{name: "type error: bandwidth", text: `version: 1
levels:
  - name: tor
    bandwidthGBps: fast #!
`, path: "levels[0].bandwidthGBps", msg: `want a number, got the string "fast"`},

	{name: "negative cliqueID", text: `version: 1
fabrics:
  - name: f
    cliqueID: -1 #!
`, path: "fabrics[0].cliqueID", msg: "-1 is out of range for this field: want an integer from 0 to 4294967295"},

	{name: "duplicate key", text: `version: 1
templates:
  - name: box
    gpus: 0
    name: other #!
`, path: "templates[0].name", msg: `duplicate key "name" (first at line 3)`},

	{name: "duplicate top-level key", text: `version: 1
name: a
name: b #!
`, path: "name", msg: `duplicate key "name" (first at line 2)`},

	{name: "syntax error", text: `version: 1
templates:
  - name: box
   gpus: 1 #!
`, msg: "did not find expected"},

	{name: "tab indentation", text: "version: 1\ntemplates:\n\t- name: box #!\n", msg: "found character that cannot start any token"},

	{name: "control character", text: "version: 1\nname: a\x01b #!\n", col: 8, msg: "control characters are not allowed"},

	{name: "invalid UTF-8", text: "version: 1\nname: ab\xff #!\n", col: 9, msg: "UTF-8"},

	{name: "empty file", text: "", line: 1, msg: "empty cluster file"},

	{name: "blank file", text: "\n\n  \n", line: 1, msg: "empty cluster file"},

	{name: "only comments", text: "# nothing here\n", line: 1, msg: "no YAML document"},

	{name: "two documents", text: `version: 1
templates: [{name: box}]
hosts: [{name: h, template: box}]
--- #!
version: 1
`, msg: "more than one YAML document"},

	{name: "top level is a list", text: "- version: 1 #!\n", msg: "must be a mapping"},

	{name: "merge of a scalar", text: `version: 1
templates:
  - <<: 5 #!
    name: box
`, path: "templates[0]", msg: `"<<" merges a mapping or a list of mappings, not the number 5`},

	{name: "error inside a merged template", text: `version: 1
accelerators: [{model: H100}]
templates:
  - &base
    name: a
    accelerator: H100
    gpus: 2
    fabrics: [{kind: nvlink, gpus: [0, 2]}] #!
  - <<: *base
    name: b
hosts: [{name: h, template: a}]
`, path: "templates[0].fabrics[0].gpus[1]", msg: "GPU 2 out of range [0, 2)"},

	{name: "unknown field in a merged mapping", text: `version: 1
templates:
  - &base {name: a, gpuz: 1} #!
  - <<: *base
    name: b
`, path: "templates[0].gpuz", msg: `unknown field "gpuz"; did you mean "gpus"?`},

	{name: "undefined alias", text: `version: 1
templates: [*nothing] #!
`, msg: "unknown anchor 'nothing' referenced"},

	{name: "huge range", text: header + `switches:
  - {name: tor1, level: tor}
hosts:
  - name: h[0-999999999] #!
    template: box
    parent: tor1
`, path: "hosts[0].name", msg: "expands to more than 1048576 names"},

	{name: "too many hosts", text: header + `switches:
  - {name: tor1, level: tor}
hosts:
  - {name: "a[000000-199999]", template: box, parent: tor1}
  - {name: "b[000000-199999]", template: box, parent: tor1} #!
`, path: "hosts[1].name", msg: "more than 262144 hosts in the file"},

	{name: "too many GPUs", text: `version: 1
accelerators: [{model: H100}]
templates: [{name: big, accelerator: H100, gpus: 256}]
hosts:
  - {name: "a[00000-99999]", template: big} #!
`, path: "hosts[0].name", msg: "more than 1048576 GPUs in the file"},

	{name: "too many names", text: header + `switches:
  - {name: "s[0000000-0999999]", level: tor}
  - {name: "t[0000000-0999999]", level: tor}
  - {name: "u[0000000-0999999]", level: tor}
  - {name: "v[0000000-0999999]", level: tor}
  - {name: "w[0000000-0999999]", level: tor} #!
hosts: [{name: h, template: box, parent: s0000000}]
`, path: "switches[4].name", msg: "expand to too many names"},

	{name: "many large groups in one pattern", text: header + `switches:
  - {name: tor1, level: tor}
hosts:
  - name: h[0-999][0-999][0-999][0-999][0-999] #!
    template: box
    parent: tor1
`, path: "hosts[0].name", msg: "expands to more than 1048576 names"},

	{name: "billion laughs", text: `version: 1
templates:
  - name: t
    gpus: 0
    numa:
      - id: 0
        pcie:
          - &a {gpus: []}
          - &b {switches: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}
          - &c {switches: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]}
          - &d {switches: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]}
          - &e {switches: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]}
          - &f {switches: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]}
          - &g {switches: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]}
          - &h {switches: [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]}
          - &i {switches: [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]}
          - &j {switches: [*i, *i, *i, *i, *i, *i, *i, *i, *i, *i]}
          - {switches: [*j, *j, *j, *j, *j, *j, *j, *j, *j, *j]}
`, line: -1, path: "templates[0].numa[0].pcie[*", msg: "too many values after expanding aliases"},

	// JSON.
	{name: "JSON trailing comma", format: FormatJSON, text: "{\n  \"version\": 1,\n  \"name\": \"x\",\n}\n",
		line: 4, col: 1, msg: "invalid JSON: invalid character '}' looking for beginning of object key string"},
	{name: "JSON comment", format: FormatJSON, text: "{\"version\": 1, // no\n}", line: 1, col: 16, msg: "invalid JSON"},
	{name: "JSON unknown field", format: FormatJSON, text: "{\n  \"version\": 1,\n  \"templates\": [\n    {\"name\": \"box\", \"gpu\": 1}\n  ]\n}",
		line: 4, col: 21, path: "templates[0].gpu", msg: `unknown field "gpu"; did you mean "gpus"?`},
	{name: "JSON duplicate key", format: FormatJSON, text: "{\"version\": 1, \"name\": \"a\",\n \"name\": \"b\"}",
		line: 2, col: 2, path: "name", msg: `duplicate key "name" (first at line 1)`},
	{name: "JSON string for int", format: FormatJSON, text: "{\"version\": 1, \"templates\": [{\"name\": \"box\", \"gpus\": \"8\"}]}",
		line: 1, col: 54, path: "templates[0].gpus", msg: `want an integer, got the string "8"`},
	{name: "JSON cliqueID beyond uint32", format: FormatJSON, text: "{\"version\": 1,\n \"fabrics\": [{\"name\": \"f\", \"cliqueID\": 99999999999}]}",
		line: 2, col: 40, path: "fabrics[0].cliqueID", msg: "99999999999 is out of range for this field: want an integer from 0 to 4294967295"},
	{name: "JSON cpuMilli beyond int64", format: FormatJSON, text: "{\"version\": 1, \"templates\": [{\"name\": \"box\", \"cpuMilli\": 99999999999999999999}]}",
		line: 1, col: 58, path: "templates[0].cpuMilli", msg: "99999999999999999999 is out of range for this field: want an integer from -9223372036854775808"},
	{name: "JSON bandwidth beyond float64", format: FormatJSON, text: "{\"version\": 1, \"levels\": [{\"name\": \"tor\", \"bandwidthGBps\": -1e999}]}",
		line: 1, col: 60, path: "levels[0].bandwidthGBps", msg: "-1e999 is out of range for this field"},
	{name: "JSON wrong version", format: FormatJSON, text: "{\n\t\"version\": 3\n}", line: 2, col: 13, path: "version", msg: "unsupported version 3"},
	{name: "JSON Build error", format: FormatJSON, text: `{"version": 1, "templates": [{"name": "box"}],
"hosts": [{"name": "h", "template": "box"}, {"name": "h", "template": "box"}]}`,
		line: 2, col: 54, path: "hosts[1].name", msg: `duplicate host "h"`},
	{name: "JSON array at top", format: FormatJSON, text: "  [1]", line: 1, col: 3, msg: "must be a JSON object"},
	{name: "JSON empty", format: FormatJSON, text: " ", line: 1, msg: "empty cluster file"},
	{name: "JSON two values", format: FormatJSON, text: "{\"version\": 1}\n{}", line: 2, col: 1, msg: "invalid JSON"},
	{name: "JSON multi-byte columns", format: FormatJSON, text: "{\"version\": 1, \"name\": \"é\", \"x\": 1}", line: 1, col: 29, path: "x", msg: `unknown field "x"`},
	{name: "JSON deep nesting", format: FormatJSON, text: `{"version": 1, "levels": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "}",
		line: 1, msg: "JSON nested too deeply"},
}

func (bf badFile) wantLine(t *testing.T) int {
	if bf.line != 0 {
		return bf.line
	}
	for i, l := range strings.Split(bf.text, "\n") {
		if strings.HasSuffix(l, "#!") {
			return i + 1
		}
	}
	t.Fatalf("%s: no #! marker and no line", bf.name)
	return 0
}

func TestBadFiles(t *testing.T) {
	for _, bf := range badFiles {
		t.Run(bf.name, func(t *testing.T) {
			format := bf.format
			if format == FormatAuto {
				format = FormatYAML
			}
			_, err := Load([]byte(bf.text), "bad."+format.String(), format)
			if err == nil {
				t.Fatal("loaded without error")
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %q is not a *FileError", err, err)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("%v does not unwrap to ErrInvalidSpec", err)
			}
			if line := bf.wantLine(t); fe.Line != line && (line >= 0 || fe.Line < 1) {
				t.Errorf("line %d, want %d: %v", fe.Line, line, err)
			}
			if bf.col != 0 && fe.Column != bf.col {
				t.Errorf("column %d, want %d: %v", fe.Column, bf.col, err)
			}
			if prefix, ok := strings.CutSuffix(bf.path, "*"); ok && strings.HasPrefix(fe.Path, prefix) {
				// matches
			} else if fe.Path != bf.path {
				t.Errorf("path %q, want %q: %v", fe.Path, bf.path, err)
			}
			if !strings.Contains(fe.Msg, bf.msg) {
				t.Errorf("message %q lacks %q", fe.Msg, bf.msg)
			}
			if fe.File != "bad."+format.String() || !strings.HasPrefix(err.Error(), fmt.Sprintf("bad.%s:%d", format, fe.Line)) {
				t.Errorf("Error() = %q", err)
			}
		})
	}
}

func TestBuildErrorsUnwrapToSpecError(t *testing.T) {
	_, err := Load([]byte(badFiles[0].text), "", FormatYAML)
	var se *SpecError
	if !errors.As(err, &se) || se.Path != "hosts[1].name" {
		t.Fatalf("errors.As SpecError: %v", err)
	}
	if want := "line 16:11: hosts[1].name: duplicate host \"h4\""; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
}

func TestFileErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    FileError
		want string
	}{
		{FileError{File: "c.yaml", Line: 3, Column: 7, Path: "hosts[0].name", Msg: "bad"}, "c.yaml:3:7: hosts[0].name: bad"},
		{FileError{File: "c.yaml", Line: 3, Msg: "bad"}, "c.yaml:3: bad"},
		{FileError{Line: 1, Column: 2, Msg: "bad"}, "line 1:2: bad"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}

func TestParseSpecDoesNotBuild(t *testing.T) {
	// ParseSpec accepts what only Build rejects (an unknown template).
	s, err := ParseSpec([]byte(badFiles[1].text), "x.yaml", FormatAuto)
	if err != nil || s.Hosts[0].Template != "bx" {
		t.Fatalf("ParseSpec: %v %#v", err, s)
	}
}

func TestSniffing(t *testing.T) {
	// No extension: '{' first means JSON, strict.
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster")
	if err := os.WriteFile(path, []byte("\ufeff \n{\"version\": 1, \"templates\": [{\"name\": \"b\"}], \"hosts\": [{\"name\": \"h\", \"template\": \"b\"}]}"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFile(path)
	if err != nil || c.NumHosts() != 1 {
		t.Fatalf("sniffed JSON: %v", err)
	}
	if err := os.WriteFile(path, []byte("version: 1\ntemplates: [{name: b}]\nhosts: [{name: h, template: b}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path); err != nil {
		t.Fatalf("sniffed YAML: %v", err)
	}
	// YAML mode reads JSON too (JSON is nearly YAML).
	if _, err := Load([]byte(`{"version": 1, "templates": [{"name": "b"}], "hosts": [{"name": "h", "template": "b"}]}`), "", FormatYAML); err != nil {
		t.Fatalf("JSON as YAML: %v", err)
	}
}

func TestNullsAreZero(t *testing.T) {
	c, err := Load([]byte("version: 1\nname:\nlevels: ~\ntemplates: [{name: b, numa: null}]\nhosts: [{name: h, template: b}]\n"), "", FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "cluster" || c.NumLevels() != 3 {
		t.Errorf("%v", c)
	}
}

// TestCountNamesMatchesExpandNames: the size check counts what Build will
// expand, name lists included (a list of two 2,000-name ranges is 4,000
// names, not their product).
func TestCountNamesMatchesExpandNames(t *testing.T) {
	for _, p := range []string{"a", "h[1-4]", "h[01-10]-[1,3,5-6]", "x[0-9][0-9]", "bad[", "bad]", "b[2-1]", "b[]", "b[1-]", "[0-1048576]", "a[0-1023][0-1024]", "a[1,,2]", "a[1-2,x]",
		"h1,h2,h3", "gb-r1-t[01-09],gb-r1-x17", "a[1-2000],b[1-2000]", "a[0-1023][0-1023],b", "a,,b", "a[1-2], b"} {
		names, err := ExpandNames(p)
		got := countNames(p)
		switch {
		case err != nil && got != 0 && got <= MaxExpandedNames:
			t.Errorf("countNames(%q) = %d, ExpandNames fails: %v", p, got, err)
		case err == nil && got != len(names):
			t.Errorf("countNames(%q) = %d, want %d", p, got, len(names))
		}
	}
}

// TestHostListSize: a host group named by a list of two 2,000-host ranges
// is 4,000 hosts for the file's size check, as for Build.
func TestHostListSize(t *testing.T) {
	text := header + `switches:
  - {name: tor1, level: tor}
hosts:
  - {name: "a[0001-2000],b[0001-2000]", template: box, parent: tor1}
`
	c, err := Load([]byte(text), "list.yaml", FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if c.NumHosts() != 4000 {
		t.Errorf("%d hosts, want 4000", c.NumHosts())
	}
}
