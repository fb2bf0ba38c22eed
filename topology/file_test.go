package topology

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// mustLoadFile loads a file of testdata/.
func mustLoadFile(t testing.TB, name string) *Cluster {
	t.Helper()
	c, err := LoadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadSampleFiles(t *testing.T) {
	for _, tc := range []struct {
		file              string
		hosts, gpus       int
		fabrics           int // domains at LevelFabric
		levels            []string
		linkA, linkB      string // two GPUs by name
		wantLink          LinkKind
		wantLinkLevelName string
	}{
		// 2 ToRs × 4 hosts × 8 GPUs; one NVSwitch domain per host.
		{"h100-2tor.yaml", 8, 64, 8, []string{"nvlink", "host", "tor", "cluster"}, "h100-01/gpu0", "h100-05/gpu0", LinkNetwork, "cluster"},
		// 18 trays × 4 GPUs in one multi-node NVLink domain.
		{"gb200-nvl72.yaml", 18, 72, 1, []string{"nvlink", "host", "cluster"}, "rack1-tray01/gpu0", "rack1-tray18/gpu3", LinkFabric, "nvlink"},
		// 4 A100 × 8 + 5 L40S boxes × 8 (4 bridge pairs each) + 2 CPU hosts;
		// L40S GPUs 1 and 2 sit on two switches under one switch: PXB.
		{"hetero.yaml", 11, 72, 4 + 5*4, []string{"nvlink", "host", "tor", "spine", "cluster"}, "l40s-1/gpu1", "l40s-1/gpu2", LinkPXB, "host"},
		// 12,500 × 8.
		{"h100-12500.yaml", 12500, 100000, 12500, []string{"nvlink", "host", "tor", "spine", "cluster"}, "dgx00001/gpu0", "dgx00033/gpu0", LinkNetwork, "spine"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c := mustLoadFile(t, tc.file)
			if c.NumHosts() != tc.hosts || c.NumGPUs() != tc.gpus {
				t.Fatalf("%v: want %d hosts, %d GPUs", c, tc.hosts, tc.gpus)
			}
			if n := len(c.DomainsAt(LevelFabric)); n != tc.fabrics {
				t.Errorf("%d fabric domains, want %d", n, tc.fabrics)
			}
			var levels []string
			for l := Level(0); int(l) < c.NumLevels(); l++ {
				levels = append(levels, c.LevelName(l))
			}
			if !reflect.DeepEqual(levels, tc.levels) {
				t.Errorf("levels %v, want %v", levels, tc.levels)
			}
			a, b := gpuByName(t, c, tc.linkA), gpuByName(t, c, tc.linkB)
			if l := c.Link(a, b); l.Kind != tc.wantLink || c.LevelName(l.Level) != tc.wantLinkLevelName {
				t.Errorf("Link(%s, %s) = %v at %s, want %v at %s", tc.linkA, tc.linkB, l.Kind, c.LevelName(l.Level), tc.wantLink, tc.wantLinkLevelName)
			}
		})
	}
}

func gpuByName(t testing.TB, c *Cluster, name string) GPUID {
	t.Helper()
	host, idx, _ := strings.Cut(name, "/gpu")
	h, ok := c.HostByName(host)
	if !ok {
		t.Fatalf("no host %q", host)
	}
	first, n := c.HostGPUs(h)
	for i := 0; i < n; i++ {
		if c.GPUName(first+GPUID(i)) == name {
			return first + GPUID(i)
		}
	}
	t.Fatalf("no GPU %q (index %s)", name, idx)
	return NoGPU
}

func TestHeteroDetails(t *testing.T) {
	c := mustLoadFile(t, "hetero.yaml")
	// The merged template keeps the A100 shape and overrides memory.
	h, _ := c.HostByName("a100-3")
	if info := c.Host(h); info.Template != "dgx-a100-1tb" || info.MemoryMiB != 1048576 || info.NumGPUs != 8 || info.CPUMilli != 256000 {
		t.Errorf("a100-3: %+v", info)
	}
	g := gpuByName(t, c, "l40s-discovered/gpu1")
	if info := c.GPU(g); info.BusID != "0000:2a:00.0" || !strings.HasSuffix(info.UUID, "61") {
		t.Errorf("discovered GPU: %+v", info)
	}
	h, _ = c.HostByName("cpu-2")
	if c.HostModel(h) != NoModel || c.CPUMilli(h) != 96000 {
		t.Errorf("cpu-2: %+v", c.Host(h))
	}
}

func TestJSONAndYAMLAgree(t *testing.T) {
	for _, f := range []string{"h100-2tor", "gb200-nvl72", "hetero"} {
		y := mustLoadFile(t, f+".yaml")
		j, err := Marshal(y.Spec(), FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Load(j, f+".json", FormatAuto)
		if err != nil {
			t.Fatalf("%s as JSON: %v\n%s", f, err, j)
		}
		if !reflect.DeepEqual(c.Spec(), y.Spec()) {
			t.Errorf("%s: JSON and YAML specs differ", f)
		}
	}
}

// fileFataler is what roundTrip needs of *testing.T and *rapid.T.
type fileFataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// roundTrip saves c in format f, loads it back and checks the spec is
// equal and that saving again gives the same bytes.
func roundTrip(t fileFataler, c *Cluster, f Format) {
	t.Helper()
	want := c.Spec()
	b, err := Marshal(want, f)
	if err != nil {
		t.Fatalf("Marshal %v: %v", f, err)
	}
	c2, err := Load(b, "saved."+f.String(), f)
	if err != nil {
		t.Fatalf("Load of saved %v: %v\n%s", f, err, b)
	}
	if got := c2.Spec(); !reflect.DeepEqual(got, want) {
		t.Fatalf("%v round trip changed the spec:\nwant %#v\ngot  %#v\nfile:\n%s", f, want, got, b)
	}
	b2, err := Marshal(c2.Spec(), f)
	if err != nil {
		t.Fatalf("Marshal of the reloaded spec: %v", err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("%v: saving twice gives different bytes", f)
	}
}

func TestRoundTripPresets(t *testing.T) {
	for _, name := range PresetNames() {
		t.Run(name, func(t *testing.T) {
			c, err := LoadPreset(name)
			if err != nil {
				t.Skip(err) // a preset that needs data not bundled yet
			}
			if c.NumGPUs() > 20000 {
				t.Skip("large; testdata/h100-12500.yaml covers this size in TestRoundTripSampleFiles")
			}
			roundTrip(t, c, FormatYAML)
			roundTrip(t, c, FormatJSON)
		})
	}
}

func TestRoundTripSampleFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, f := range files {
		if testing.Short() && strings.Contains(f, "12500") {
			continue // four builds of 100,000 GPUs
		}
		c := mustLoadFile(t, filepath.Base(f))
		roundTrip(t, c, FormatYAML)
		roundTrip(t, c, FormatJSON)
	}
}

func TestSaveFile(t *testing.T) {
	dir := t.TempDir()
	c := mustLoadFile(t, "hetero.yaml")
	for _, name := range []string{"c.yaml", "c.json", "c.cluster"} {
		path := filepath.Join(dir, name)
		if err := SaveFile(path, c); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		if isJSON := bytes.HasPrefix(b, []byte("{")); isJSON != (name == "c.json") {
			t.Errorf("%s: JSON = %v", name, isJSON)
		}
		c2, err := LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c2.Spec(), c.Spec()) {
			t.Errorf("%s: spec changed", name)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("temporary files left behind: %v", ents)
	}
	if err := SaveFile(filepath.Join(dir, "no", "such", "dir.yaml"), c); err == nil {
		t.Error("SaveFile into a missing directory succeeded")
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile of a missing file: %v", err)
	}
}

func TestMarshalIsHumanFriendly(t *testing.T) {
	c, err := LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	y, err := Marshal(c.Spec(), FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	s := string(y)
	// Keys in the documented order, lists of numbers on one line, quoted
	// strings that would otherwise read as numbers, no empty fields.
	for _, want := range []string{"version: 1\nname: dgx-h100\n", "gpus: [0, 1, 2, 3, 4, 5, 6, 7]", `computeCapability: "9.0"`, "starts: [0, 1, 2, 3, 4, 5, 6]", "\n          - {switches: [{gpus: [0]}]}\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("YAML lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range []string{"parent:", "levels:", "perParent:", "gpuIDs:", "fabrics: []", "null"} {
		if strings.Contains(s, bad) {
			t.Errorf("YAML has empty field %q:\n%s", bad, s)
		}
	}
	if i, j := strings.Index(s, "templates:"), strings.Index(s, "hosts:"); i < 0 || j < i {
		t.Errorf("templates should come before hosts")
	}
	j, err := Marshal(c.Spec(), FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), "\n            {\"switches\": [{\"gpus\": [0]}]},\n") || !strings.HasPrefix(string(j), "{\n  \"version\": 1,\n") {
		t.Errorf("JSON layout:\n%s", j)
	}
}

func TestEmptyListsRoundTripAsOmitted(t *testing.T) {
	// An empty list and an omitted one are the same spec: Build keeps nil.
	s, _ := Preset("pcie-8gpu")
	s.Levels = []LevelSpec{}
	s.Switches = []SwitchGroup{}
	s.Templates[0].Fabrics = []HostFabricSpec{}
	s.Hosts[0].GPUs = []GPUIdentity{}
	c, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Spec()
	if got.Levels != nil || got.Switches != nil || got.Templates[0].Fabrics != nil || got.Hosts[0].GPUs != nil {
		t.Errorf("empty lists kept: %#v", got)
	}
	roundTrip(t, c, FormatYAML)
}

func TestMarshalRejectsWhatFilesCannotHold(t *testing.T) {
	s, _ := Preset("dgx-h100")
	s.Accelerators[0].Vendor = "nv\xffidia"
	if _, err := Marshal(s, FormatJSON); err == nil || !strings.Contains(err.Error(), "accelerators[0].vendor") {
		t.Errorf("JSON with invalid UTF-8: %v", err)
	}
	// YAML keeps such a string (as !!binary) exactly.
	y, err := Marshal(s, FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseSpec(y, "", FormatYAML)
	if err != nil || back.Accelerators[0].Vendor != s.Accelerators[0].Vendor {
		t.Errorf("YAML binary string: %v %q", err, back.Accelerators[0].Vendor)
	}
	s, _ = Preset("dgx-h100")
	s.Templates[0].Fabrics[0].BandwidthGBps = posInf()
	if _, err := Marshal(s, FormatYAML); err == nil || !strings.Contains(err.Error(), "templates[0].fabrics[0].bandwidthGBps") {
		t.Errorf("infinite bandwidth: %v", err)
	}
}

func posInf() float64 {
	var zero float64
	return 1 / zero
}

func TestScalarForms(t *testing.T) {
	// Integers are decimal even with leading zeros; hex and underscores
	// go through yaml.v3; numbers may be written as strings where a string
	// is wanted.
	s, err := ParseSpec([]byte(`version: 1
accelerators: [{model: 100, computeCapability: 9.0, memoryMiB: 0x10}]
templates: [{name: t, numa: [{id: 010}], cpuMilli: +5}]
levels: [{name: tor, bandwidthGBps: 12}]
`), "", FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	a := s.Accelerators[0]
	if a.Model != "100" || a.ComputeCapability != "9.0" || a.MemoryMiB != 16 || s.Templates[0].NUMA[0].ID != 10 || s.Templates[0].CPUMilli != 5 || s.Levels[0].BandwidthGBps != 12 {
		t.Errorf("%#v", s)
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Format
	}{{"yaml", FormatYAML}, {"YML", FormatYAML}, {"json", FormatJSON}, {"auto", FormatAuto}, {"", FormatAuto}} {
		if got, err := ParseFormat(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseFormat(%q) = %v, %v", tc.in, got, err)
		}
	}
	if _, err := ParseFormat("toml"); err == nil {
		t.Error("ParseFormat(toml) succeeded")
	}
	for path, want := range map[string]Format{"a.json": FormatJSON, "a.YAML": FormatYAML, "x/a.yml": FormatYAML, "a": FormatAuto, "a.txt": FormatAuto} {
		if got := FormatOf(path); got != want {
			t.Errorf("FormatOf(%q) = %v, want %v", path, got, want)
		}
	}
	if FormatJSON.String() != "json" || Format(9).String() != "Format(9)" {
		t.Error("Format.String")
	}
}

func TestDecodeReader(t *testing.T) {
	f, err := os.Open("testdata/h100-2tor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Decode(f, "h100-2tor.yaml", FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "h100-2tor" || len(s.Hosts) != 1 || s.Hosts[0].PerParent != 4 {
		t.Errorf("decoded %#v", s)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	c, err := LoadReader(f, "h100-2tor.yaml", FormatAuto)
	if err != nil || c.NumHosts() != 8 {
		t.Fatalf("LoadReader: %v", err)
	}
	if _, err := LoadReader(strings.NewReader("version: 1\nhosts: 5\n"), "r.yaml", FormatAuto); err == nil || !strings.HasPrefix(err.Error(), "r.yaml:2:8: hosts: want a list") {
		t.Errorf("LoadReader of a bad file: %v", err)
	}
	big := strings.Repeat("#", MaxFileBytes+1)
	if _, err := Decode(strings.NewReader(big), "big.yaml", FormatYAML); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized input: %v", err)
	}
}

func BenchmarkLoad12500Hosts(b *testing.B) {
	data, err := os.ReadFile("testdata/h100-12500.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := Load(data, "h100-12500.yaml", FormatYAML)
		if err != nil {
			b.Fatal(err)
		}
		if c.NumHosts() != 12500 || c.NumGPUs() != 100000 {
			b.Fatal(c)
		}
	}
}

// explicitSpec is the 12,500-host cluster of testdata/h100-12500.yaml with
// every host written out with its GPU identities, as assembling NVML
// discovery output gives it: the largest file a real cluster makes.
func explicitSpec(b *testing.B) Spec {
	s := mustLoadFile(b, "h100-12500.yaml").Spec()
	names, err := ExpandNames(s.Hosts[0].Name)
	if err != nil {
		b.Fatal(err)
	}
	tors, err := ExpandNames(s.Hosts[0].Parent)
	if err != nil {
		b.Fatal(err)
	}
	g := s.Hosts[0]
	s.Hosts = s.Hosts[:0]
	for i, name := range names {
		h := HostGroup{Name: name, Template: g.Template, Parent: tors[i/g.PerParent]}
		for j := 0; j < 8; j++ {
			h.GPUs = append(h.GPUs, GPUIdentity{Index: j, UUID: fmt.Sprintf("GPU-%08x-1111-2222-3333-%012x", i, j), BusID: fmt.Sprintf("0000:%02x:00.0", 0x18+j)})
		}
		s.Hosts = append(s.Hosts, h)
	}
	return s
}

func BenchmarkLoad12500HostsExplicit(b *testing.B) {
	for _, format := range []Format{FormatYAML, FormatJSON} {
		b.Run(format.String(), func(b *testing.B) {
			data, err := Marshal(explicitSpec(b), format)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(data))/(1<<20), "MiB")
			b.ReportAllocs()
			for b.Loop() {
				c, err := Load(data, "explicit", format)
				if err != nil {
					b.Fatal(err)
				}
				if c.NumHosts() != 12500 || c.GPU(99999).UUID == "" {
					b.Fatal(c)
				}
			}
		})
	}
}

func BenchmarkLoadJSON12500Hosts(b *testing.B) {
	c := mustLoadFile(b, "h100-12500.yaml")
	data, err := Marshal(c.Spec(), FormatJSON)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := Load(data, "h100-12500.json", FormatJSON)
		if err != nil {
			b.Fatal(err)
		}
		if c.NumHosts() != 12500 {
			b.Fatal(c)
		}
	}
}
