package nvml

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
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

// stripANSI removes terminal escape sequences: CSI sequences (ESC [
// parameters, intermediates, a final byte, such as the "\x1b[4m" … "\x1b[0m"
// nvidia-smi 580 puts around the header of topo -m) and two-byte ESC
// sequences. An ESC that starts no complete sequence is kept.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if c := s[i+1]; c != '[' && c >= 0x40 && c <= 0x5f {
			i++
			continue
		}
		if s[i+1] != '[' {
			b.WriteByte(s[i])
			continue
		}
		j := i + 2
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
			j++
		}
		if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseTopoM reads the GPU rows of nvidia-smi topo -m: a header of
// tab-separated column names (GPU0 … GPUn, NICs, "CPU Affinity", "NUMA
// Affinity", …) and one row per GPU; the legend after them is ignored, and
// so are terminal escape sequences anywhere.
func parseTopoM(text string) (*topoMatrix, error) {
	var header []string
	m := &topoMatrix{}
	sc := bufio.NewScanner(strings.NewReader(stripANSI(text)))
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

// nvidia-smi 580 underlines the header with terminal escape codes even when
// its output goes to a file (the h200-sxm-1 capture); the parser reads
// through them.
func TestTopoMParserEscapes(t *testing.T) {
	const text = "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n" +
		"GPU0\t X \tNV18\t0-15\t0\t\tN/A\n" +
		"GPU1\tNV18\t X \t0-15\t0\t\tN/A\n\nLegend:\n"
	m, err := parseTopoM(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.cells) != 2 || m.cells[0][1] != "NV18" || m.numa[1] != 0 {
		t.Fatalf("parsed %+v", m)
	}
	if got := stripANSI("a\x1b[1;31mb\x1b[0mc\x1b[Kd\x1b"); got != "abcd\x1b" {
		t.Errorf("stripANSI = %q", got)
	}
}

// lgipProfile is one row of nvidia-smi mig -lgip: a GPU-instance profile's
// name, driver id, instance limit and memory.
type lgipProfile struct {
	name      string
	id        int
	instances int
	memMiB    int64
}

var lgipRow = regexp.MustCompile(`^\|\s+\d+\s+MIG\s+(\S+)\s+(\d+)\s+\d+/(\d+)\s+([\d.]+)\s`)
var lgippRow = regexp.MustCompile(`Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,]+)\}:(\d+)`)

// parseMIGCapture reads nvidia-smi mig -lgip and -lgipp as the driver
// prints them into profiles and their placements by profile id.
func parseMIGCapture(lgip, lgipp string) ([]lgipProfile, map[int][]MIGPlacement, error) {
	var ps []lgipProfile
	for _, line := range strings.Split(lgip, "\n") {
		m := lgipRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[2])
		n, _ := strconv.Atoi(m[3])
		gib, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return nil, nil, fmt.Errorf("mig-lgip.txt: %q: %v", line, err)
		}
		ps = append(ps, lgipProfile{name: m[1], id: id, instances: n, memMiB: int64(gib * 1024)})
	}
	pl := map[int][]MIGPlacement{}
	for _, line := range strings.Split(lgipp, "\n") {
		m := lgippRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		size, _ := strconv.Atoi(m[3])
		for _, s := range strings.Split(m[2], ",") {
			start, _ := strconv.Atoi(s)
			pl[id] = append(pl[id], MIGPlacement{Start: start, Size: size})
		}
	}
	if len(ps) == 0 || len(pl) == 0 {
		return nil, nil, fmt.Errorf("no MIG profiles")
	}
	return ps, pl, nil
}

// TestGoldenMIGProfiles replays the MIG facts of each golden capture
// (nvidia-smi mig -lgip and -lgipp) through BuildMIG: every profile the
// driver lists, media-extension variants included, comes out under the
// driver's name with the driver's placements, and the topology engine
// places one instance of each.
func TestGoldenMIGProfiles(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "golden", "*"))
	ran := 0
	for _, dir := range dirs {
		lgip, err1 := os.ReadFile(filepath.Join(dir, "mig-lgip.txt"))
		lgipp, err2 := os.ReadFile(filepath.Join(dir, "mig-lgipp.txt"))
		if err1 != nil || err2 != nil {
			continue
		}
		ps, pl, err := parseMIGCapture(string(lgip), string(lgipp))
		if err != nil {
			continue // MIG not supported on that machine
		}
		ran++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c, err := topology.LoadFile(filepath.Join(dir, "discover.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			total := c.Model(c.HostModel(0)).MemoryMiB
			var facts []MIGProfileFacts
			for _, p := range ps {
				base, suffix, _ := strings.Cut(p.name, "+")
				sl, _ := strconv.Atoi(base[:strings.IndexByte(base, 'g')])
				kind := map[int]int{1: profile1Slice, 2: profile2Slice, 3: profile3Slice, 4: profile4Slice, 7: profile7Slice}[sl]
				if pl[p.id][0].Size == 2 && sl == 1 {
					kind = profile1SliceRev2
				}
				if suffix == "me" {
					kind = map[int]int{1: profile1SliceRev1, 2: profile2SliceRev1}[sl]
				}
				facts = append(facts, MIGProfileFacts{Kind: kind, Slices: sl, MemoryMiB: p.memMiB, Placements: pl[p.id]})
			}
			mig, skipped, ws := BuildMIG(total, facts)
			if len(skipped) != 0 || len(ws) != 0 || mig == nil {
				t.Fatalf("skipped %q, warnings %v, MIG %+v", skipped, ws, mig)
			}
			if len(mig.Profiles) != len(ps) {
				t.Errorf("%d profiles built, the driver lists %d", len(mig.Profiles), len(ps))
			}
			for _, p := range ps {
				i := slices.IndexFunc(mig.Profiles, func(q topology.MIGProfileSpec) bool { return q.Name == p.name })
				if i < 0 {
					t.Errorf("profile %s (id %d) missing", p.name, p.id)
					continue
				}
				q := mig.Profiles[i]
				var want []int
				for _, x := range pl[p.id] {
					want = append(want, x.Start)
				}
				if q.Size != pl[p.id][0].Size || !slices.Equal(q.Starts, want) || q.MemoryMiB != p.memMiB {
					t.Errorf("%s: built %+v, the driver says %d slots at %v, %d MiB", p.name, q, pl[p.id][0].Size, want, p.memMiB)
				}
				if (q.Exclusive != "") != (p.instances == 1 && len(want) > 1) {
					t.Errorf("%s: exclusive %q with %d instance(s) at %d starts", p.name, q.Exclusive, p.instances, len(want))
				}
			}
			// A preset of the same model has the same geometry.
			model := c.Model(c.HostModel(0)).Model
			for _, name := range topology.MachineNames() {
				if _, acc, err := topology.MachineTemplate(name); err == nil && acc.Model == model && !reflect.DeepEqual(acc.MIG, mig) {
					t.Errorf("preset %s's MIG geometry differs from the driver's:\n%+v\n%+v", name, acc.MIG, mig)
				}
			}
			// The engine holds each profile up to the driver's instance limit.
			s := c.Spec()
			s.Accelerators[0].MIG = mig
			cl, err := topology.Build(s)
			if err != nil {
				t.Fatal(err)
			}
			acc := cl.Model(cl.HostModel(0))
			for _, p := range ps {
				id, _ := acc.MIGProfileByName(p.name)
				l := topology.NewLedger(cl)
				n := 0
				for _, st := range acc.MIGProfiles[id].Starts {
					if l.Allocate(topology.Claim{GPUs: []topology.GPUClaim{{GPU: 0, Kind: topology.ClaimMIG, Profile: id, Start: int8(st)}}}) == nil {
						n++
					}
				}
				if n != p.instances {
					t.Errorf("%s: %d instances placed, the driver allows %d", p.name, n, p.instances)
				}
			}
		})
	}
	if ran == 0 {
		t.Skip("no golden capture with MIG profiles")
	}
}
