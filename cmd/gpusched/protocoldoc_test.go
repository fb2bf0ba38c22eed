package main

import (
	"bytes"
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
	var cmds [][]string
	in, cur := false, ""
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case l == "```sh":
			in = true
		case l == "```":
			in = false
		case in:
			cur += " " + strings.TrimSuffix(strings.TrimSpace(l), `\`)
			if !strings.HasSuffix(strings.TrimSpace(l), `\`) {
				if w := shellWords(cur); len(w) > 0 && w[0] == "gpusched" {
					cmds = append(cmds, w[1:])
				}
				cur = ""
			}
		}
	}
	if len(cmds) < 4 {
		t.Fatalf("docs/policy-protocol.md: %d gpusched commands in sh blocks", len(cmds))
	}
	work := filepath.Join(t.TempDir(), "gpusched")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
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
	for _, f := range []string{"policy-runs/report.html", "policy-sweep/sweep.csv"} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	page, _ := os.ReadFile("policy-runs/report.html")
	if !strings.Contains(string(page), "las.py") || !strings.Contains(string(page), "sha256") {
		t.Error("policy-runs/report.html does not name the Python policy's script and its hash")
	}
}
