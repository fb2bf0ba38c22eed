package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tourCommand is one command of the README's CLI tour.
type tourCommand struct {
	line int      // README line where it starts
	args []string // after "gpusched"
	to   string   // "> FILE": stdout goes there
}

// readTour returns the commands of the first sh block after "## CLI
// tour" in README.md, continuation lines joined and comments dropped.
func readTour(t *testing.T, readme string) []tourCommand {
	t.Helper()
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	i := 0
	for i < len(lines) && lines[i] != "## CLI tour" {
		i++
	}
	for i < len(lines) && lines[i] != "```sh" {
		i++
	}
	if i == len(lines) {
		t.Fatalf("%s: no ```sh block after ## CLI tour", readme)
	}
	var out []tourCommand
	var cur string
	start := 0
	for i++; i < len(lines) && lines[i] != "```"; i++ {
		l := lines[i]
		if k := strings.Index(l, " #"); k >= 0 {
			l = l[:k]
		}
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if cur == "" {
			start = i + 1
		}
		cont := strings.HasSuffix(strings.TrimSpace(l), `\`)
		cur += " " + strings.TrimSuffix(strings.TrimSpace(l), `\`)
		if cont {
			continue
		}
		f := strings.Fields(cur)
		cur = ""
		if len(f) == 0 {
			continue
		}
		if f[0] != "gpusched" {
			t.Fatalf("README.md:%d: tour command does not start with gpusched: %q", start, strings.Join(f, " "))
		}
		c := tourCommand{line: start, args: f[1:]}
		if n := len(c.args); n >= 2 && c.args[n-2] == ">" {
			c.to, c.args = c.args[n-1], c.args[:n-2]
		}
		out = append(out, c)
	}
	return out
}

// TestREADMETour runs every command of the README's CLI tour as written,
// from a directory that looks like a fresh clone (the repository's files,
// ../shared beside it when this checkout has one), in order (explain reads
// what the sim run before it saved). Lines that read ../shared skip when it
// is absent; the default main job, the FGD experiment and the lines on
// the full traces skip under -short; bench (minutes) always skips.
func TestREADMETour(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmds := readTour(t, filepath.Join(root, "README.md"))
	if len(cmds) < 10 {
		t.Fatalf("README tour: %d commands, want the whole tour", len(cmds))
	}
	base := t.TempDir()
	work := filepath.Join(base, "gpusched")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	shared := filepath.Join(root, "..", "shared")
	_, serr := os.Stat(filepath.Join(shared, "data"))
	haveShared := serr == nil
	if haveShared {
		if err := os.Symlink(shared, filepath.Join(base, "shared")); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)
	for _, c := range cmds {
		line := strings.Join(c.args, " ")
		name := fmt.Sprintf("line%d_%s", c.line, strings.Join(c.args[:min(2, len(c.args))], "_"))
		name = strings.ReplaceAll(name, "/", "_")
		ok := t.Run(name, func(t *testing.T) {
			switch {
			case strings.Contains(line, "../shared") && !haveShared:
				t.Skipf("README.md:%d needs ../shared/data, absent here", c.line)
			case c.args[0] == "bench":
				t.Skipf("README.md:%d runs the benchmark suite (minutes); gpusched bench has its own tests", c.line)
			case c.args[0] == "serve":
				t.Skipf("README.md:%d serves until interrupted; TestServeInBrowser runs it", c.line)
			case testing.Short() && (len(c.args) == 1 || strings.Contains(line, "../shared") || strings.HasPrefix(line, "place inflation")):
				t.Skipf("README.md:%d is heavy; skipped under -short", c.line)
			}
			var args []string
			for _, a := range c.args {
				if strings.ContainsAny(a, "*?[") {
					m, err := filepath.Glob(a)
					if err != nil || len(m) == 0 {
						t.Fatalf("README.md:%d: %s matches no file", c.line, a)
					}
					args = append(args, m...)
					continue
				}
				args = append(args, a)
			}
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- run(args, strings.NewReader(""), &stdout, &stderr) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(5 * time.Minute):
				t.Fatalf("README.md:%d: gpusched %s ran over 5 minutes", c.line, line)
			}
			if c.args[0] == "topology" && c.args[1] == "discover" && code != 0 {
				// No driver here: the command says what to do instead.
				if !strings.Contains(stderr.String(), "use a cluster file or a preset") && !strings.Contains(stderr.String(), "NVML discovery needs a cgo build") {
					t.Fatalf("README.md:%d: exit %d: %s", c.line, code, stderr.String())
				}
				return
			}
			if code != 0 {
				t.Fatalf("README.md:%d: gpusched %s: exit %d\n%s", c.line, line, code, stderr.String())
			}
			if stdout.Len()+stderr.Len() == 0 {
				t.Fatalf("README.md:%d: gpusched %s printed nothing", c.line, line)
			}
			if c.to != "" {
				if err := os.WriteFile(c.to, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
		if !ok && strings.Contains(line, "--save-state") {
			t.Fatalf("README.md:%d failed; the explain line after it needs its state", c.line)
		}
	}
}
