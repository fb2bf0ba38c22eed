package main

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the outputs in docs/what-if.md")

// TestWhatIfDoc runs every command of docs/what-if.md (a "$ gpusched …"
// line in a sh block) and checks the text block after it.
func TestWhatIfDoc(t *testing.T) {
	const path = "../../docs/what-if.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("docs/what-if.md: %v", err)
	}
	doc := string(data)
	block := regexp.MustCompile("(?s)```sh\n\\$ gpusched ([^\n]*)\n```\n\n```text\n(.*?)```")
	matches := block.FindAllStringSubmatchIndex(doc, -1)
	if len(matches) < 2 {
		t.Fatalf("docs/what-if.md: %d commands, want 2", len(matches))
	}
	var out strings.Builder
	last := 0
	for _, m := range matches {
		args := strings.Fields(doc[m[2]:m[3]])
		for i, a := range args {
			if strings.HasPrefix(a, "docs/") {
				args[i] = "../../" + a
			}
		}
		var stdout, stderr bytes.Buffer
		if code := run(args, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("gpusched %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
		got := stdout.String()
		if want := doc[m[4]:m[5]]; got != want && !*updateDocs {
			t.Errorf("gpusched %s:\ngot:\n%s\nwant (docs/what-if.md):\n%s", doc[m[2]:m[3]], got, want)
		}
		out.WriteString(doc[last:m[4]])
		out.WriteString(got)
		last = m[5]
	}
	out.WriteString(doc[last:])
	if *updateDocs {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKubeFlagsErrors: the --kube paths fail with a clear message.
func TestKubeFlagsErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "run", "--kube", "../../docs/what-if/dump.yaml"}, "--kube needs --config DIR"},
		{[]string{"explain", "--kube", "../../docs/what-if/dump.yaml", "state.yaml"}, "--kube reads a dump; no state file"},
		{[]string{"explain", "--kube", "../../docs/what-if/dump.yaml"}, "no queues"},
		{[]string{"explain", "--kube", "../../docs/what-if/dump.yaml", "--config", "../../docs/what-if/kueue", "--now", "yesterday"}, "--now"},
		{[]string{"explain", "--kube", "../../docs/what-if/nope.yaml", "--config", "../../docs/what-if/kueue"}, "nope.yaml"},
		{[]string{"explain"}, "want a state file (or --kube DUMP)"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, nil, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("gpusched %s: exit %d, stderr %q; want an error containing %q", strings.Join(c.args, " "), code, stderr.String(), c.want)
		}
	}
}
