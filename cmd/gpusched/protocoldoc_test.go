package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// shellWords splits a command line as sh does for the docs' commands:
// on blanks, with single quotes grouping.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, word := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			in, word = !in, true
		case !in && (r == ' ' || r == '\t'):
			if word {
				out = append(out, cur.String())
				cur.Reset()
				word = false
			}
		default:
			cur.WriteRune(r)
			word = true
		}
	}
	if word {
		out = append(out, cur.String())
	}
	return out
}

// TestPolicyProtocolDoc runs every gpusched command of the sh blocks of
// docs/policy-protocol.md as written, from a directory that looks like a
// fresh clone (as TestREADMETour does): the Python policies through
// compare, seeds, the report and a sweep. It skips where python3 is
// absent.
func TestPolicyProtocolDoc(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH: the doc's commands run Python policies")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "docs", "policy-protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The sh blocks' gpusched commands and export lines (GPUSCHED is the
	// clone), and the Python blocks, each saved as the file its first
	// line's comment names ("# my_policy.py: …").
	t.Setenv("GPUSCHED", root)
	work := filepath.Join(t.TempDir(), "gpusched")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	block, cur, py := "", "", ""
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case block == "" && strings.HasPrefix(l, "```"):
			block = l[3:]
		case l == "```":
			if block == "python" {
				name, _, _ := strings.Cut(strings.TrimPrefix(py, "# "), ":")
				if err := os.WriteFile(filepath.Join(work, name), []byte(py), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			block, py = "", ""
		case block == "python":
			py += l + "\n"
		case block == "sh":
			cur += " " + strings.TrimSuffix(strings.TrimSpace(l), `\`)
			if !strings.HasSuffix(strings.TrimSpace(l), `\`) {
				w := shellWords(cur)
				switch {
				case len(w) == 2 && w[0] == "export":
					k, v, _ := strings.Cut(w[1], "=")
					t.Setenv(k, os.ExpandEnv(v))
				case len(w) > 0 && w[0] == "gpusched":
					cmds = append(cmds, w[1:])
				}
				cur = ""
			}
		}
	}
	if len(cmds) < 6 {
		t.Fatalf("docs/policy-protocol.md: %d gpusched commands in sh blocks", len(cmds))
	}
	for _, name := range []string{"python", "docs"} {
		if err := os.Symlink(filepath.Join(root, name), filepath.Join(work, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)
	for _, args := range cmds {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("gpusched %q: exit %d\n%s", args, code, stderr.String())
		}
	}
	for _, f := range []string{"policy-runs/report.html", "policy-sweep/sweep.csv", "my-runs/report.html", "my-runs/seed-3/exec-python3 my_policy.py/summary.json"} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	page, _ := os.ReadFile("policy-runs/report.html")
	if !strings.Contains(string(page), "las.py") || !strings.Contains(string(page), "sha256") {
		t.Error("policy-runs/report.html does not name the Python policy's script and its hash")
	}
	// The policy of one's own, outside the clone: its script's hash in
	// the report, and its interval over the seeds in the sweep.
	mine, _ := os.ReadFile(filepath.Join(work, "my_policy.py"))
	sum := sha256.Sum256(mine)
	if page, _ := os.ReadFile("my-runs/report.html"); len(mine) == 0 || !strings.Contains(string(page), hex.EncodeToString(sum[:])) {
		t.Error("my-runs/report.html does not carry my_policy.py's SHA-256")
	}
	f, err := os.Open("my-sweep/sweep-intervals.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 3 || rows[2][0] != "exec:python3 my_policy.py" || rows[2][1] != "3" {
		t.Fatalf("my-sweep/sweep-intervals.csv: %v %v, want fifo and my_policy.py over 3 seeds", rows, err)
	}
}
