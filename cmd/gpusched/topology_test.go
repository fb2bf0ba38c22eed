package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/spf13/cobra"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// gpusched runs the command line in-process and returns its exit status,
// standard output and standard error.
func gpusched(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// heteroFile is a sample cluster file of the topology package.
var heteroFile = filepath.Join("..", "..", "topology", "testdata", "hetero.yaml")

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"show-default", []string{"topology", "show"}},
		{"show-h100-1k", []string{"topology", "show", "--preset", "h100-1k"}},
		{"show-hetero", []string{"topology", "show", "--file", heteroFile}},
		{"show-generated-gb200", []string{"topology", "show", "--machine", "gb200-nvl72", "--hosts", "36", "--hosts-per-tor", "18"}},
		{"show-generated-b200", []string{"topology", "show", "--machine", "dgx-b200", "--hosts", "40", "--hosts-per-tor", "8", "--tors-per-spine", "2"}},
		{"export-dgx-h100.yaml", []string{"topology", "show", "--format", "yaml"}},
		{"export-hetero.json", []string{"topology", "show", "--file", heteroFile, "-o", "json"}},
		{"matrix-default", []string{"topology", "matrix"}},
		{"matrix-dgx-a100", []string{"topology", "matrix", "--preset", "dgx-a100"}},
		{"matrix-pcie-8gpu", []string{"topology", "matrix", "--preset", "pcie-8gpu"}},
		{"matrix-ascend-910-bandwidth", []string{"topology", "matrix", "--preset", "ascend-910", "--bandwidth"}},
		{"matrix-gb200-tray", []string{"topology", "matrix", "--preset", "gb200-nvl72", "gb200-nvl72-18"}},
		{"matrix-hetero-l40s", []string{"topology", "matrix", "--file", heteroFile, "l40s-1"}},
		{"matrix-hetero-cpu", []string{"topology", "matrix", "-f", heteroFile, "cpu-1"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := gpusched(t, "", tc.args...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			path := filepath.Join("testdata", tc.golden+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if out != string(want) {
				t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, out)
			}
		})
	}
}

// TestPresets checks one line per preset with its host and GPU counts
// (not a golden file: the presets belong to the topology package).
func TestPresets(t *testing.T) {
	code, out, errOut := gpusched(t, "", "topology", "presets")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 1+len(topology.PresetNames()) || !strings.HasPrefix(lines[0], "NAME ") {
		t.Fatalf("want a header and %d presets:\n%s", len(topology.PresetNames()), out)
	}
	for i, name := range topology.PresetNames() {
		fields := strings.Fields(lines[i+1])
		c, err := topology.LoadPreset(name)
		if err != nil {
			continue
		}
		if len(fields) < 3 || fields[0] != name || fields[1] != fmt.Sprint(c.NumHosts()) || fields[2] != fmt.Sprint(c.NumGPUs()) {
			t.Errorf("line %q; want %s %d hosts %d GPUs", lines[i+1], name, c.NumHosts(), c.NumGPUs())
		}
	}
	if !strings.Contains(out, "h100-100k    12500  100000  100000×H100-SXM5-80GB") || !strings.Contains(out, "391 tor, 25 spine") {
		t.Errorf("h100-100k line:\n%s", out)
	}
}

// TestShowUnknownGPUMemory: an accelerator whose memory the spec leaves at
// zero (unknown), like openb's G2 and G3, shows "unknown", not "0 MiB".
func TestShowUnknownGPUMemory(t *testing.T) {
	code, out, errOut := gpusched(t, "", "topology", "show", "--preset", "openb")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	models := out[strings.Index(out, "Accelerator models:"):]
	models = models[:strings.Index(models, "\n\n")]
	rows := map[string][]string{}
	for _, line := range strings.Split(models, "\n")[2:] {
		f := strings.Fields(line)
		rows[f[0]] = f
	}
	// MODEL VENDOR HOSTS GPUS GPU-MEMORY…: the memory is the fifth field,
	// two words when known ("15 GiB").
	for _, m := range []string{"G2", "G3"} {
		if f := rows[m]; len(f) < 5 || f[4] != "unknown" {
			t.Errorf("%s: GPU memory %q, want unknown:\n%s", m, f, models)
		}
	}
	if f := rows["T4"]; len(f) < 6 || f[4]+" "+f[5] != "15 GiB" {
		t.Errorf("T4: %q, want 15 GiB:\n%s", f, models)
	}
	if strings.Contains(models, "0 MiB") {
		t.Errorf("a model shows 0 MiB of GPU memory:\n%s", models)
	}
}

// TestExportLoadsBack: "topology show --format yaml|json" writes a cluster
// file that loads back to an equal spec.
func TestExportLoadsBack(t *testing.T) {
	for _, args := range [][]string{
		{"--preset", "dgx-a100"}, {"--preset", "gb200-nvl72"}, {"--preset", "h100-10k"}, {"--preset", "openb"},
		{"--file", heteroFile}, {"--machine", "ascend-910", "--hosts", "12", "--hosts-per-tor", "4"},
	} {
		for _, format := range []string{"yaml", "json"} {
			name := strings.Join(args, " ") + " " + format
			code, out, errOut := gpusched(t, "", append([]string{"topology", "show", "--format", format}, args...)...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", name, code, errOut)
			}
			f, _ := topology.ParseFormat(format)
			got, err := topology.Load([]byte(out), "export."+format, f)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want := selectCluster(t, args...)
			if !reflect.DeepEqual(got.Spec(), want.Spec()) {
				t.Errorf("%s: exported spec loads back different", name)
			}
			// And the exported file feeds the command again, through stdin.
			code, summary, errOut := gpusched(t, out, "topology", "show", "--file", "-")
			if code != 0 || !strings.HasPrefix(summary, "Cluster "+want.Name()+":") {
				t.Errorf("%s: show --file - exit %d: %s%s", name, code, summary, errOut)
			}
		}
	}
}

// selectCluster returns the cluster that the cluster flags args select.
func selectCluster(t *testing.T, args ...string) *topology.Cluster {
	t.Helper()
	cmd := &cobra.Command{}
	cf := addClusterFlags(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	c, err := cf.cluster(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClusterFlags(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		hosts, gpus int
		name        string
	}{
		{nil, 1, 8, "dgx-h100"},
		{[]string{"--preset", "h100-1k"}, 125, 1000, "h100-1k"},
		{[]string{"--machine", "dgx-a100"}, 1, 8, "dgx-a100-x1"},
		{[]string{"--machine", "gb200-nvl72"}, 18, 72, "gb200-nvl72-x18"},
		// 100 hosts, 10 per ToR → 10 ToRs, 4 per spine → 3 spines.
		{[]string{"--machine", "dgx-h100", "--hosts", "100", "--hosts-per-tor", "10", "--tors-per-spine", "4"}, 100, 800, "dgx-h100-x100"},
		{[]string{"-f", heteroFile}, 11, 72, "hetero"},
	} {
		c := selectCluster(t, tc.args...)
		if c.NumHosts() != tc.hosts || c.NumGPUs() != tc.gpus || c.Name() != tc.name {
			t.Errorf("%v: %v", tc.args, c)
		}
	}
	c := selectCluster(t, "--machine", "dgx-h100", "--hosts", "100", "--hosts-per-tor", "10", "--tors-per-spine", "4")
	if spine, _ := c.LevelByName("spine"); len(c.DomainsAt(spine)) != 3 {
		t.Errorf("spines: %d", len(c.DomainsAt(spine)))
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\ntemplates:\n  - name: dgx\n    gpus: eight\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"topology", "show", "--file", bad}, "", "bad.yaml:4:11: templates[0].gpus: want an integer, got the string \"eight\""},
		{[]string{"topology", "show", "--file", "-"}, "{\"version\": 2}", "<stdin>:1:13: version: unsupported version 2"},
		{[]string{"topology", "show", "--file", filepath.Join(dir, "missing.yaml")}, "", "no such file"},
		{[]string{"topology", "show", "--preset", "nope"}, "", `unknown preset "nope"`},
		{[]string{"topology", "show", "--preset", "dgx-a100", "--file", bad}, "", "use only one of --preset, --file and --machine"},
		{[]string{"topology", "show", "--hosts", "4"}, "", "--hosts needs --machine"},
		{[]string{"topology", "show", "--machine", "gb200-nvl72", "--hosts", "5"}, "", "multiple of 18"},
		{[]string{"topology", "show", "--machine", "dgx-z"}, "", `unknown machine preset "dgx-z"`},
		{[]string{"topology", "show", "--machine", "dgx-h100", "--hosts", "0"}, "", "--hosts 0: want at least 1 host"},
		{[]string{"topology", "show", "--machine", "gb200-nvl72", "--hosts", "0"}, "", "--hosts 0: want at least 1 host"},
		{[]string{"topology", "show", "--machine", "dgx-h100", "--hosts", "-3"}, "", "--hosts -3: want at least 1 host"},
		{[]string{"topology", "show", "--machine", "dgx-h100", "--hosts", "4", "--hosts-per-tor", "-1"}, "", "--hosts-per-tor -1: want 1 or more"},
		{[]string{"topology", "show", "--machine", "dgx-h100", "--hosts", "4", "--hosts-per-tor", "2", "--tors-per-spine", "-2"}, "", "--tors-per-spine -2: want 1 or more"},
		{[]string{"topology", "show", "--machine", "dgx-h100", "--hosts", "4", "--tors-per-spine", "2"}, "", "--tors-per-spine needs --hosts-per-tor"},
		{[]string{"topology", "matrix", "--machine", "dgx-h100", "--hosts", "0"}, "", "--hosts 0: want at least 1 host"},
		{[]string{"topology", "show", "--format", "xml"}, "", `unknown --format "xml"`},
		{[]string{"topology", "show", "--bogus"}, "", "unknown flag: --bogus (see 'gpusched topology show --help')"},
		{[]string{"topology", "show", "extra"}, "", `unknown command "extra"`},
		{[]string{"topology", "matrix", "nohost"}, "", `no host "nohost" in cluster dgx-h100 (hosts: dgx-h100-1)`},
		{[]string{"topology", "matrix", "--preset", "h100-1k", "x"}, "", "(hosts: dgx-h100-001, dgx-h100-002, dgx-h100-003, dgx-h100-004, dgx-h100-005, … 125 in all)"},
		{[]string{"topology", "matrix", "a", "b"}, "", "accepts at most 1 arg(s), received 2"},
	} {
		code, out, errOut := gpusched(t, tc.stdin, tc.args...)
		if code != 1 || out != "" || !strings.HasPrefix(errOut, "gpusched: ") || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"topology", "--help"}, {"topology", "show", "--help"}, {"topology", "matrix", "-h"}, {"topology", "presets", "--help"}} {
		code, out, errOut := gpusched(t, "", args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d, stderr %q, stdout %q", args, code, errOut, out)
		}
	}
	_, out, _ := gpusched(t, "", "topology", "matrix", "--help")
	for _, want := range []string{"NVS    NVLink through an NVSwitch fabric", "--preset", "--file", "--machine", "--hosts-per-tor", "--bandwidth"} {
		if !strings.Contains(out, want) {
			t.Errorf("matrix --help lacks %q", want)
		}
	}
}
