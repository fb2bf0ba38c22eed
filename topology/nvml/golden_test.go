package nvml

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// topoMatrix is what nvidia-smi topo -m says about a host's GPUs.
type topoMatrix struct {
	cells [][]string // GPU × GPU: "X", "NV18", "PIX", …
	numa  []int      // NUMA Affinity column, -1 when absent or N/A
}

var gpuLabel = regexp.MustCompile(`^GPU\d+$`)

// parseTopoM reads the GPU rows of nvidia-smi topo -m: a header of
// tab-separated column names (GPU0 … GPUn, NICs, "CPU Affinity", "NUMA
// Affinity", …) and one row per GPU; the legend after them is ignored.
func parseTopoM(text string) (*topoMatrix, error) {
	var header []string
	m := &topoMatrix{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \r")
		fields := strings.Split(line, "\t")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		if header == nil {
			if len(fields) > 1 && fields[0] == "" && gpuLabel.MatchString(fields[1]) {
				header = fields
			}
			continue
		}
		if !gpuLabel.MatchString(fields[0]) {
			if len(m.cells) > 0 {
				break
			}
			continue
		}
		n := 0
		for _, h := range header[1:] {
			if gpuLabel.MatchString(h) {
				n++
			}
		}
		if len(fields) < n+1 {
			return nil, fmt.Errorf("row %q has %d cells, want at least %d", fields[0], len(fields)-1, n)
		}
		m.cells = append(m.cells, fields[1:n+1])
		numa := -1
		for i, h := range header {
			if h == "NUMA Affinity" && i < len(fields) {
				if v, err := strconv.Atoi(fields[i]); err == nil {
					numa = v
				}
			}
		}
		m.numa = append(m.numa, numa)
	}
	if header == nil || len(m.cells) == 0 {
		return nil, fmt.Errorf("no GPU matrix found")
	}
	for i, row := range m.cells {
		if len(row) != len(m.cells) {
			return nil, fmt.Errorf("GPU%d: %d cells for %d GPUs", i, len(row), len(m.cells))
		}
	}
	return m, nil
}

var nvCell = regexp.MustCompile(`^NV\d+$`)

// compareTopoM checks a one-host cluster against nvidia-smi's matrix and
// returns the differences.
func compareTopoM(c *topology.Cluster, m *topoMatrix) []string {
	var diffs []string
	if c.NumGPUs() != len(m.cells) {
		return []string{fmt.Sprintf("%d GPUs discovered, nvidia-smi shows %d", c.NumGPUs(), len(m.cells))}
	}
	for i := range m.cells {
		for j, cell := range m.cells[i] {
			if i == j {
				continue
			}
			got := c.Link(topology.GPUID(i), topology.GPUID(j)).Kind
			want, ok := map[string]topology.LinkKind{"PIX": topology.LinkPIX, "PXB": topology.LinkPXB, "PHB": topology.LinkPHB,
				"NODE": topology.LinkNODE, "SYS": topology.LinkSYS}[cell]
			if nvCell.MatchString(cell) {
				want, ok = topology.LinkFabric, true
			}
			if !ok {
				diffs = append(diffs, fmt.Sprintf("GPU%d-GPU%d: unknown cell %q", i, j, cell))
			} else if got != want {
				diffs = append(diffs, fmt.Sprintf("GPU%d-GPU%d: discovered %v, nvidia-smi says %s", i, j, got, cell))
			}
		}
		if m.numa[i] >= 0 {
			name := c.DomainName(c.GPU(topology.GPUID(i)).NUMA)
			if want := "numa" + strconv.Itoa(m.numa[i]); !strings.HasSuffix(name, "/"+want) {
				diffs = append(diffs, fmt.Sprintf("GPU%d: discovered NUMA domain %s, nvidia-smi says NUMA %d", i, name, m.numa[i]))
			}
		}
	}
	return diffs
}

// TestGoldenCaptures checks every case that testdata/capture.sh recorded on
// a real machine: the discovered file loads, and agrees with nvidia-smi topo
// -m on every GPU pair and on NUMA affinity.
func TestGoldenCaptures(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "golden", "*"))
	if len(dirs) == 0 {
		t.Skip("no golden cases captured on real machines yet; run testdata/capture.sh on a GPU host to add one")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c, err := topology.LoadFile(filepath.Join(dir, "discover.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			text, err := os.ReadFile(filepath.Join(dir, "topo-m.txt"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := parseTopoM(string(text))
			if err != nil {
				t.Fatalf("topo-m.txt: %v", err)
			}
			for _, d := range compareTopoM(c, m) {
				t.Error(d)
			}
		})
	}
}

// The parser and the comparison, on a matrix written here in nvidia-smi's
// layout for the dgx-a100 preset (a constructed input, not a capture).
func TestTopoMParser(t *testing.T) {
	const text = "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n" +
		"GPU0\t X \tPXB\tSYS\tSYS\tPXB\t48-63,176-191\t3\t\tN/A\n" +
		"GPU1\tPXB\t X \tSYS\tSYS\tPXB\t48-63,176-191\t3\t\tN/A\n" +
		"GPU2\tSYS\tSYS\t X \tPXB\tSYS\t16-31,144-159\t1\t\tN/A\n" +
		"GPU3\tSYS\tSYS\tPXB\t X \tSYS\t16-31,144-159\t1\t\tN/A\n" +
		"NIC0\tPXB\tPXB\tSYS\tSYS\t X \n\nLegend:\n\n  X    = Self\n"
	m, err := parseTopoM(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.cells) != 4 || m.cells[0][1] != "PXB" || m.numa[2] != 1 {
		t.Fatalf("parsed %+v", m)
	}
	tmpl := topology.HostTemplate{Name: "t", GPUs: 4, Accelerator: "X", NUMA: []topology.NUMASpec{
		{ID: 3, PCIe: []topology.PCIeSpec{{Switches: []topology.PCIeSpec{{Switches: []topology.PCIeSpec{{GPUs: []int{0}}, {GPUs: []int{1}}}}}}}},
		{ID: 1, PCIe: []topology.PCIeSpec{{Switches: []topology.PCIeSpec{{Switches: []topology.PCIeSpec{{GPUs: []int{2}}, {GPUs: []int{3}}}}}}}},
	}}
	c := buildOne(t, tmpl)
	if d := compareTopoM(c, m); len(d) != 0 {
		t.Errorf("differences: %q", d)
	}
	// With NVLink the matrix says NV#; the PCIe-only template disagrees.
	m.cells[0][1], m.cells[1][0] = "NV12", "NV12"
	if d := compareTopoM(c, m); len(d) != 2 {
		t.Errorf("differences: %q", d)
	}
	if _, err := parseTopoM("no matrix here"); err == nil {
		t.Error("parsed garbage")
	}
}
