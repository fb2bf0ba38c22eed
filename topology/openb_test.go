package topology

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// openbShape counts hosts of one (GPU count, model) shape.
type openbShape struct {
	gpus  int
	model string
}

func modelCounts(c *Cluster) (hosts map[openbShape]int, gpus map[string]int) {
	hosts, gpus = map[openbShape]int{}, map[string]int{}
	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		info := c.Host(h)
		model := ""
		if info.Model != NoModel {
			model = c.Model(info.Model).Model
		}
		hosts[openbShape{info.NumGPUs, model}]++
		gpus[model] += info.NumGPUs
	}
	return hosts, gpus
}

func TestOpenBPresets(t *testing.T) {
	// Hosts per (GPUs, model) shape as in the trace's node lists; the GPU
	// node list holds the same 1,213 GPU nodes as the full list.
	wantHosts := map[openbShape]int{
		{8, "G2"}: 549, {2, "T4"}: 387, {2, "P100"}: 131, {8, "G3"}: 39,
		{4, "V100M16"}: 28, {8, "V100M32"}: 21, {1, "V100M16"}: 19, {4, "T4"}: 17,
		{4, "V100M32"}: 9, {8, "V100M16"}: 8, {1, "P100"}: 3, {1, "A10"}: 2,
	}
	// GPUs per model: G2 549×8; T4 387×2+17×4; P100 131×2+3; G3 39×8;
	// V100M16 28×4+19+8×8; V100M32 21×8+9×4; A10 2. Total 6,212.
	wantGPUs := map[string]int{"G2": 4392, "T4": 842, "P100": 265, "G3": 312, "V100M16": 195, "V100M32": 204, "A10": 2}
	for _, tc := range []struct {
		name     string
		hosts    int
		cpuOnly  int
		first    string
		last     string
		nTmpl    int
		nModels  int
		cpuMilli int64 // total CPU of the cluster
	}{
		{name: "openb", hosts: 1523, cpuOnly: 310, first: "openb-node-0000", last: "openb-node-1522", nTmpl: 27, nModels: 7},
		{name: "openb-gpu", hosts: 1213, cpuOnly: 0, first: "openb-node-0000", last: "openb-node-1212", nTmpl: 15, nModels: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := presetCluster(t, tc.name)
			if c.Name() != tc.name {
				t.Errorf("name %q", c.Name())
			}
			if c.NumHosts() != tc.hosts || c.NumGPUs() != 6212 {
				t.Fatalf("%d hosts, %d GPUs; want %d, 6212", c.NumHosts(), c.NumGPUs(), tc.hosts)
			}
			hosts, gpus := modelCounts(c)
			if hosts[openbShape{0, ""}] != tc.cpuOnly {
				t.Errorf("%d CPU-only hosts, want %d", hosts[openbShape{0, ""}], tc.cpuOnly)
			}
			delete(hosts, openbShape{0, ""})
			delete(gpus, "")
			if !mapsEqual(hosts, wantHosts) {
				t.Errorf("hosts by shape %v, want %v", hosts, wantHosts)
			}
			if !mapsEqual(gpus, wantGPUs) {
				t.Errorf("GPUs by model %v, want %v", gpus, wantGPUs)
			}
			if got := c.HostName(0); got != tc.first {
				t.Errorf("first host %q, want %q", got, tc.first)
			}
			if got := c.HostName(HostID(c.NumHosts() - 1)); got != tc.last {
				t.Errorf("last host %q, want %q", got, tc.last)
			}
			if c.NumLevels() != 3 || c.LevelCluster() != 2 {
				t.Errorf("%d levels; want fabric, host, cluster only", c.NumLevels())
			}
			if n := len(c.DomainsAt(LevelFabric)); n != 0 {
				t.Errorf("%d fabric domains, want none", n)
			}
			if got := len(c.Templates()); got != tc.nTmpl {
				t.Errorf("%d templates %v, want %d", got, c.Templates(), tc.nTmpl)
			}
			if got := len(c.Models()); got != tc.nModels {
				t.Errorf("%d models, want %d", got, tc.nModels)
			}
			// Implicit intra-host layout: every GPU pair of a host is PHB.
			for h := HostID(0); int(h) < c.NumHosts(); h++ {
				first, n := c.HostGPUs(h)
				if n > 1 {
					if k := c.Link(first, first+1).Kind; k != LinkPHB {
						t.Fatalf("%s: GPUs 0-1 are %v, want PHB", c.HostName(h), k)
					}
				}
			}
			// Known NVIDIA models carry their memory; G2 and G3 do not.
			for _, m := range c.Models() {
				switch m.Model {
				case "G2", "G3":
					if m.MemoryMiB != 0 || m.Vendor != "" {
						t.Errorf("%s: undisclosed model has memory %d, vendor %q", m.Model, m.MemoryMiB, m.Vendor)
					}
				default:
					if m.MemoryMiB == 0 || m.Vendor != "nvidia" {
						t.Errorf("%s: memory %d, vendor %q", m.Model, m.MemoryMiB, m.Vendor)
					}
				}
			}
			// Runs of numbered nodes of one shape fold into ranges.
			sp, _ := Preset(tc.name)
			if len(sp.Hosts) > c.NumHosts()/2 {
				t.Errorf("%d host groups for %d hosts; ranges not folded", len(sp.Hosts), c.NumHosts())
			}
			if err := NewLedger(c).Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOpenBMatchesTrace compares the presets node by node with the trace
// files in ../shared/data when they are there.
func TestOpenBMatchesTrace(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "data", "cluster-trace-gpu-v2023", "csv")
	for _, tc := range []struct{ preset, file string }{
		{"openb", "openb_node_list_all_node.csv"},
		{"openb-gpu", "openb_node_list_gpu_node.csv"},
	} {
		raw, err := os.ReadFile(filepath.Join(dir, tc.file))
		if err != nil {
			t.Skipf("trace data not available (%v); the presets use the embedded copy", err)
		}
		c := presetCluster(t, tc.preset)
		recs, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		checkHostsMatchRecords(t, c, recs[1:])
	}
}

// checkHostsMatchRecords checks that c has exactly the nodes of recs
// (sn, cpu_milli, memory_mib, gpu, model), in order.
func checkHostsMatchRecords(t testing.TB, c *Cluster, recs [][]string) {
	t.Helper()
	if c.NumHosts() != len(recs) {
		t.Fatalf("%d hosts, %d records", c.NumHosts(), len(recs))
	}
	for i, r := range recs {
		h := c.Host(HostID(i))
		model := ""
		if h.Model != NoModel {
			model = c.Model(h.Model).Model
		}
		got := []string{h.Name, strconv.FormatInt(h.CPUMilli, 10), strconv.FormatInt(h.MemoryMiB, 10), strconv.Itoa(h.NumGPUs), model}
		want := slices.Clone(r[:5])
		for k := 1; k <= 3; k++ { // numbers may have leading zeros
			if v, err := strconv.ParseInt(want[k], 10, 64); err == nil {
				want[k] = strconv.FormatInt(v, 10)
			}
		}
		if strings.EqualFold(want[4], "nan") {
			want[4] = ""
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("host %d is %v, record is %v", i, got, want)
		}
	}
}

func mapsEqual[K comparable](a, b map[K]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestParseNodeList(t *testing.T) {
	const in = "model,gpu,sn,memory_mib,cpu_milli,extra\n" +
		"T4,2,n08,1024,4000,x\n" +
		"T4,2,n09,1024,4000,x\n" +
		"T4,2,n10,1024,4000,x\n" + // n08..n10: one range, padding kept
		",0,n11,1536,1500,x\n" + // CPU-only, fractional cores and GiB
		"nan,0,n12,1536,1500,x\n" + // "nan" as pandas shows a missing model
		"T4,2,n13,1024,4000,x\n" +
		"X9,1,gpu,1024,4000,x\n" + // an unknown model
		"T4,2,z9,1024,4000,x\n" +
		"T4,2,z10,1024,4000,x\n" // z9..z10: a range without padding
	s, err := ParseNodeList(strings.NewReader(in), "mine")
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{
		Version: SpecVersion, Name: "mine",
		Accelerators: []AcceleratorSpec{{Model: "T4", Vendor: "nvidia", MemoryMiB: 15360, ComputeCapability: "7.5"}, {Model: "X9"}},
		Templates: []HostTemplate{
			{Name: "T4x2-4c-1Gi", CPUMilli: 4000, MemoryMiB: 1024, Accelerator: "T4", GPUs: 2},
			{Name: "cpu-1500m-1536Mi", CPUMilli: 1500, MemoryMiB: 1536},
			{Name: "X9x1-4c-1Gi", CPUMilli: 4000, MemoryMiB: 1024, Accelerator: "X9", GPUs: 1},
		},
		Hosts: []HostGroup{
			{Name: "n[08-10]", Template: "T4x2-4c-1Gi"},
			{Name: "n[11-12]", Template: "cpu-1500m-1536Mi"},
			{Name: "n13", Template: "T4x2-4c-1Gi"},
			{Name: "gpu", Template: "X9x1-4c-1Gi"},
			{Name: "z[9-10]", Template: "T4x2-4c-1Gi"},
		},
	}
	if !specEqual(s, want) {
		t.Fatalf("got  %+v\nwant %+v", s, want)
	}
	c, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		names = append(names, c.HostName(h))
	}
	if got := strings.Join(names, " "); got != "n08 n09 n10 n11 n12 n13 gpu z9 z10" {
		t.Fatalf("host order %s", got)
	}
}

func specEqual(a, b Spec) bool {
	return specString(a) == specString(b)
}

func specString(s Spec) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(s.Version) + " " + s.Name + "\n")
	for _, a := range s.Accelerators {
		b.WriteString("acc " + a.Model + " " + a.Vendor + " " + strconv.FormatInt(a.MemoryMiB, 10) + " " + a.ComputeCapability + "\n")
	}
	for _, t := range s.Templates {
		b.WriteString("tmpl " + t.Name + " " + strconv.FormatInt(t.CPUMilli, 10) + " " + strconv.FormatInt(t.MemoryMiB, 10) + " " + t.Accelerator + " " + strconv.Itoa(t.GPUs) + "\n")
	}
	for _, h := range s.Hosts {
		b.WriteString("host " + h.Name + " " + h.Template + " " + h.Parent + "\n")
	}
	return b.String()
}

func TestParseNodeListErrors(t *testing.T) {
	const hdr = "sn,cpu_milli,memory_mib,gpu,model\n"
	for _, tc := range []struct {
		name, in string
		want     string // the error text
	}{
		{"empty", "", "line 1: empty input; want a header sn,cpu_milli,memory_mib,gpu,model"},
		{"header only", hdr, "line 1: no nodes after the header"},
		{"missing column", "sn,cpu_milli,memory_mib,gpu\nn1,1,1,0\n", `line 1: header lacks column "model" (want sn,cpu_milli,memory_mib,gpu,model)`},
		{"duplicate column", "sn,cpu_milli,memory_mib,gpu,model,gpu\n", `line 1, column 35 (gpu): duplicate column "gpu"`},
		{"field count", hdr + "n1,1,1,0\n", "line 2: record has 4 fields; the header has 5"},
		{"bad quote", hdr + "n1,1\"2,1,0,\n", `line 2, column 5: bare " in non-quoted-field`},
		{"unterminated quote", hdr + "\"n1,1,1,0,\n", `line 2, column 12: extraneous or missing " in quoted-field`},
		{"not a number", hdr + "n1,1,12a,0,\n", `line 2, column 6 (memory_mib): "12a" is not a whole number`},
		{"negative", hdr + "n1,-1,1,0,\n", `line 2, column 4 (cpu_milli): "-1" is not a whole number`},
		{"empty number", hdr + "n1,1,1,,\n", "line 2, column 8 (gpu): empty value; want a whole number"},
		{"too many GPUs", hdr + "n1,1,1,257,T4\n", "line 2, column 8 (gpu): 257 out of range [0, 256]"},
		{"huge", hdr + "n1,1,99999999999999999999,1,T4\n", `line 2, column 6 (memory_mib): "99999999999999999999" is too large (at most 1099511627776)`},
		{"no model", hdr + "n1,1,1,2,\n", "line 2, column 10 (model): a node with 2 GPUs needs a model"},
		{"model without GPUs", hdr + "n1,1,1,0,T4\n", `line 2, column 10 (model): model "T4" given for a node without GPUs`},
		{"model with space", hdr + "n1,1,1,1,T 4\n", `line 2, column 10 (model): model "T 4" contains white space or a control character`},
		{"empty name", hdr + ",1,1,0,\n", "line 2, column 1 (sn): empty node name"},
		{"name with space", hdr + "\"n 1\",1,1,0,\n", `line 2, column 1 (sn): node name "n 1" contains white space or a control character`},
		{"name with bracket", hdr + "n[1-2],1,1,0,\n", `line 2, column 1 (sn): node name "n[1-2]" contains '['`},
		{"name with slash", hdr + "a/b,1,1,0,\n", `line 2, column 1 (sn): node name "a/b" contains '/'`},
		{"duplicate name", hdr + "n1,1,1,0,\nn2,1,1,0,\n\nn1,1,1,0,\n", `line 5, column 1 (sn): duplicate node "n1" (first on line 2)`},
		{"cluster name", hdr + "x,1,1,0,\n", `line 2, column 1 (sn): node "x" has the name of the cluster`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNodeList(strings.NewReader(tc.in), "x")
			var ne *NodeListError
			if !errors.As(err, &ne) || !errors.Is(err, ErrInvalidNodeList) {
				t.Fatalf("error %v (%T), want a *NodeListError", err, err)
			}
			if err.Error() != tc.want {
				t.Fatalf("error\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
	t.Run("bad cluster name", func(t *testing.T) {
		_, err := ParseNodeList(strings.NewReader(hdr+"n1,1,1,0,\n"), "a b")
		var se *SpecError
		if !errors.As(err, &se) || se.Path != "name" {
			t.Fatalf("error %v, want a *SpecError at name", err)
		}
	})
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := ParseNodeList(io.MultiReader(strings.NewReader(hdr), errReader{boom}), "x")
		if !errors.Is(err, boom) {
			t.Fatalf("error %v, want the reader's", err)
		}
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// FuzzParseNodeList checks that ParseNodeList never panics, that every
// rejection is a *NodeListError with a position, and that every accepted
// list builds into a cluster with exactly its nodes, in order.
func FuzzParseNodeList(f *testing.F) {
	f.Add([]byte("sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1024,2,T4\nn2,1000,1024,2,T4\nn3,0,0,0,\n"))
	f.Add([]byte("model,gpu,sn,memory_mib,cpu_milli\nG2,8,a09,1,1\nG2,8,a10,1,1\nnan,0,a11,1,1\n"))
	f.Add([]byte("\uFEFFsn,cpu_milli,memory_mib,gpu,model\n\"n,1\",1,1,1,\"X\"\"\"\n"))
	f.Add([]byte("sn,cpu_milli,memory_mib,gpu,model\nx0,1,1,0,\nx00,1,1,0,\nx1,1,1,0,\nx2,1,1,1,A\nx3,1,1,0,\n"))
	f.Add(openbGPUNodes[:2000])
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ParseNodeList(bytes.NewReader(in), "fuzz")
		if err != nil {
			var ne *NodeListError
			if !errors.As(err, &ne) || ne.Line < 1 || ne.Msg == "" {
				t.Fatalf("error %v (%T) has no position", err, err)
			}
			return
		}
		c, err := Build(s)
		if err != nil {
			t.Fatalf("parsed spec does not build: %v", err)
		}
		r := csv.NewReader(bytes.NewReader(in))
		r.FieldsPerRecord = -1
		recs, err := r.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		// Put the columns in the canonical order.
		pos := map[string]int{}
		for i, h := range recs[0] {
			if i == 0 {
				h = strings.TrimPrefix(h, "\uFEFF")
			}
			pos[h] = i
		}
		var rows [][]string
		for _, r := range recs[1:] {
			rows = append(rows, []string{r[pos["sn"]], r[pos["cpu_milli"]], r[pos["memory_mib"]], r[pos["gpu"]], r[pos["model"]]})
		}
		checkHostsMatchRecords(t, c, rows)
	})
}
