package policy_test

import (
	"encoding/csv"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim"
)

// docBlock is one fenced block of a Markdown section: its info string
// (sh, go, yaml) and its lines.
type docBlock struct {
	lang string
	body string
}

// sectionBlocks returns the fenced blocks of the section of doc that
// starts at the heading line head and ends at the next heading of its
// level or above.
func sectionBlocks(t *testing.T, doc, head string) []docBlock {
	t.Helper()
	lines := strings.Split(doc, "\n")
	i := slices.Index(lines, head)
	if i < 0 {
		t.Fatalf("no heading %q", head)
	}
	level := strings.Index(head, " ")
	var out []docBlock
	var cur *docBlock
	for _, l := range lines[i+1:] {
		switch {
		case cur == nil && heading.MatchString(l) && strings.Index(l, " ") <= level:
			return out
		case cur == nil && strings.HasPrefix(l, "```") && len(l) > 3:
			cur = &docBlock{lang: l[3:]}
		case cur != nil && l == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body += l + "\n"
		}
	}
	return out
}

// heading is a Markdown heading line.
var heading = regexp.MustCompile(`^#+ `)

// fileComment is a block's first line naming the file it is: "// main.go: …",
// "# cluster.yaml".
var fileComment = regexp.MustCompile(`^(?://|#) ([\w.-]+\.(?:go|yaml|py))\b`)

// TestOutsideModule follows docs/policy-protocol.md's "Go: register it by
// name" as a researcher would, outside the repository: a new module in a
// temporary directory whose go.mod replaces gpusched by this checkout,
// the doc's main.go and cluster.yaml written as they stand, and the doc's
// commands run by sh as written: the build, then compare with seeds and a
// sweep of the registered placer, ordering and demotion beside the
// built-ins. It checks the report, the sweep's intervals and that the
// provenance names the program and its policies. The build resolves
// gpusched's dependencies from the module cache (GOFLAGS=-mod=mod,
// GOPROXY=off); it skips without the go tool or those modules, and in
// -short mode (the build takes tens of seconds on a cold cache).
func TestOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a module outside the repository")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: the doc's steps build a module")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the doc's commands")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "policy-protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := sectionBlocks(t, string(doc), "## Go: register it by name")
	dir := filepath.Join(t.TempDir(), "mysim")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var scripts []string
	files := 0
	for _, b := range blocks {
		switch b.lang {
		case "sh":
			scripts = append(scripts, b.body)
		case "go", "yaml":
			m := fileComment.FindStringSubmatch(b.body)
			if m == nil {
				t.Fatalf("a %s block does not start with the comment naming its file:\n%s", b.lang, b.body)
			}
			if err := os.WriteFile(filepath.Join(dir, m[1]), []byte(b.body), 0o644); err != nil {
				t.Fatal(err)
			}
			files++
		}
	}
	if len(scripts) < 2 || files < 2 {
		t.Fatalf("the section has %d sh blocks and %d files, want the setup, main.go, cluster.yaml and the runs", len(scripts), files)
	}
	env := append(os.Environ(),
		"GPUSCHED="+root,
		"PATH="+filepath.Dir(goTool)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOFLAGS="+goflags(),
		"GOPROXY=off", "GOSUMDB=off", "GOWORK=off")
	for _, s := range scripts {
		cmd := exec.Command("sh", "-e", "-c", s)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			if strings.Contains(string(out), "module lookup disabled") {
				t.Skipf("the module cache lacks a dependency of gpusched (GOPROXY=off):\n%s", out)
			}
			t.Fatalf("sh -e -c %q in %s: %v\n%s", s, dir, err, out)
		}
	}
	at := func(p string) string { return filepath.Join(dir, p) }

	ver, err := exec.Command(at("mysim"), "--version").Output()
	if err != nil || !strings.HasPrefix(string(ver), "gpusched ") || !strings.Contains(string(ver), root) {
		t.Errorf("mysim --version: %q, %v; want gpusched's version, replaced by %s", ver, err, root)
	}

	page, err := os.ReadFile(at("runs/report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"spread", "smallest-first", "two-level:4", "example.com/mysim", "ordering two-level", "placer spread", "paired"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("runs/report.html has no %q", want)
		}
	}
	// Each seed's runs: every pair of placer and ordering, with the
	// provenance naming the program and the policies.
	var sums []sim.Summary
	err = filepath.WalkDir(at("runs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "summary.json" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var s sim.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		sums = append(sums, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 3*2*3 {
		t.Errorf("%d summary.json under runs, want 3 seeds × 2 placers × 3 orderings", len(sums))
	}
	demoted := false
	for _, s := range sums {
		p := s.Provenance
		if p == nil || !strings.HasPrefix(p.Program, "example.com/mysim") || !slices.Contains(p.Registered, "ordering smallest-first") ||
			!slices.Contains(p.Registered, "placer spread") || p.Flags["orderings"] != "fifo,smallest-first,two-level:4" {
			t.Fatalf("%s %s: provenance %+v", s.Policy, s.Ordering, p)
		}
		if s.Jobs.Completed != 200 {
			t.Errorf("%s %s: %d of 200 jobs completed", s.Policy, s.Ordering, s.Jobs.Completed)
		}
		if s.Ordering == "two-level:4" && s.Preemption.Preemptions > 0 {
			demoted = true
		}
	}
	if !demoted {
		t.Error("two-level:4 never preempted: the demotion was not run")
	}

	// The sweep: one row per ordering with its median and interval over
	// the three seeds.
	f, err := os.Open(at("sweep/sweep-intervals.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 4 {
		t.Fatalf("sweep-intervals.csv: %d rows, %v; want a header and 3 orderings", len(rows), err)
	}
	col := func(name string) int {
		i := slices.Index(rows[0], name)
		if i < 0 {
			t.Fatalf("sweep-intervals.csv has no column %s: %v", name, rows[0])
		}
		return i
	}
	o, n, med, lo, hi := col("ordering"), col("seeds"), col("jct_mean_s_median"), col("jct_mean_s_lo"), col("jct_mean_s_hi")
	var got []string
	wide := false
	for _, r := range rows[1:] {
		got = append(got, r[o])
		m, _ := strconv.ParseFloat(r[med], 64)
		l, _ := strconv.ParseFloat(r[lo], 64)
		h, _ := strconv.ParseFloat(r[hi], 64)
		if r[n] != "3" || l > m || m > h || m <= 0 {
			t.Errorf("sweep-intervals.csv row %v: seeds %s, JCT %g [%g, %g]", r[o], r[n], m, l, h)
		}
		wide = wide || l < h
	}
	if !slices.Equal(got, []string{"fifo", "smallest-first", "two-level"}) {
		t.Errorf("sweep-intervals.csv orderings %v", got)
	}
	if !wide {
		t.Error("every JCT interval has zero width: the seeds did not vary the runs")
	}
}

// goflags is the environment's GOFLAGS with -mod=mod in place of any -mod
// it sets.
func goflags() string {
	var out []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if !strings.HasPrefix(f, "-mod=") {
			out = append(out, f)
		}
	}
	return strings.Join(append(out, "-mod=mod"), " ")
}
