package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var explainState = filepath.Join("testdata", "explain", "state.yaml")

// TestExplainGolden checks the text and JSON output of `gpusched explain`
// on the sample state (go test -update rewrites the golden files).
func TestExplainGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"state.txt", []string{"explain", explainState}},
		{"state.json", []string{"explain", "--json", explainState}},
		{"state-job.txt", []string{"explain", "--no-quota", "--job", "pre-2,pre-1,nope", explainState}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := gpusched(t, "", tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			path := filepath.Join("testdata", "explain", tc.golden+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if string(want) != out {
				t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, out)
			}
		})
	}
}

func TestExplainStdin(t *testing.T) {
	data, err := os.ReadFile(explainState)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := gpusched(t, string(data), "explain", "--no-quota", "-")
	if code != 0 || !strings.Contains(out, "waiting:") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
}

// TestExplainErrors checks that bad states name the place and the problem.
func TestExplainErrors(t *testing.T) {
	base, err := os.ReadFile(explainState)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"yaml", "now: 2025", "now: [2025", "<stdin>: yaml:"},
		{"unknown field", "defaultRuntime: 2h", "defaultRuntme: 2h", "field defaultRuntme not found"},
		{"no now", "now: 2025-01-01T10:00:00Z\n", "", "now: missing"},
		{"version", "version: 1", "version: 99", "<stdin>:3: version: version 99"},
		{"cluster", "  machine: dgx-h100\n", "  machine: dgx-h100\n  preset: h100-1k\n", "cluster: give exactly one of"},
		// Times a Scheduler could not have: started or submitted after the
		// state's now, started before submitted (package snapshot tests
		// the rest; FuzzLoad there fuzzes the loader).
		{"started after now", "  started: 2025-01-01T07:00:00Z", "  started: 2025-01-01T10:05:00Z", "<stdin>:33: jobs[0].started: 2025-01-01T10:05:00Z is after now (2025-01-01T10:00:00Z): the job has not started yet"},
		{"submitted after now", "  submitted: 2025-01-01T09:10:00Z", "  submitted: 2025-01-01T10:30:00Z", "<stdin>:63: jobs[3].submitted: 2025-01-01T10:30:00Z is after now (2025-01-01T10:00:00Z): the job was not submitted yet"},
		{"started before submitted", "  started: 2025-01-01T09:05:00Z", "  started: 2025-01-01T08:55:00Z", "<stdin>:52: jobs[2].started: 2025-01-01T08:55:00Z is before the job was submitted (2025-01-01T09:00:00Z)"},
		{"queue", "nominal: 16, max: 16", "nominal: 16, max: 8", "<stdin>:22: queues.root.children[1].quotas[0].max: max 8 below nominal quota 16"},
		{"host", "{host: dgx-h100-5, gpus", "{host: dgx-h100-50, gpus", `<stdin>:45: jobs[1].placement[0].host: unknown host "dgx-h100-50"`},
		{"gpu index", "{host: dgx-h100-6, gpu: 1, milli: 500}\n  - {host: dgx-h100-6, gpu: 1,", "{host: dgx-h100-6, gpu: 9, milli: 500}\n  - {host: dgx-h100-6, gpu: 1,", "jobs[2].placement[2].gpu: GPU 9 outside 0..7"},
		{"overlap", "{host: dgx-h100-5, gpus", "{host: dgx-h100-1, gpus", "jobs[1]: job eval-1: claims do not fit the ledger"},
		{"state", "state: running\n  started: 2025-01-01T09:30:00Z", "state: sleeping\n  started: 2025-01-01T09:30:00Z", `jobs[1].state: unknown state "sleeping"`},
		{"health", "state: draining}", "state: tired}", `<stdin>:24: health[0].state: unknown health "tired"`},
		{"pending placement", "- id: exp-3\n  queue: experiments\n", "- id: exp-3\n  queue: experiments\n  placement: [{host: dgx-h100-1}]\n", "<stdin>:80: jobs[7].placement: a pending job has no placement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Replace(string(base), tc.old, tc.new, 1)
			if in == string(base) {
				t.Fatalf("edit %q not applied", tc.old)
			}
			code, _, errOut := gpusched(t, in, "explain", "-")
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %q", code, errOut, tc.want)
			}
		})
	}
}

// TestExplainHelpExample checks that the state file printed by
// `gpusched explain --help` loads as it stands, and that its pending job
// waits for the reason its comment gives.
func TestExplainHelpExample(t *testing.T) {
	code, help, errOut := gpusched(t, "", "explain", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var state []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, "  version: 1"):
			in = true
		case in && (line == "" || !strings.HasPrefix(line, "  ")):
			in = false
		}
		if in {
			state = append(state, strings.TrimPrefix(line, "  "))
		}
		if !in && len(state) > 0 {
			break
		}
	}
	if len(state) < 10 {
		t.Fatalf("no state example found in the help:\n%s", help)
	}
	code, out, errOut := gpusched(t, strings.Join(state, "\n")+"\n", "explain", "--job", "pretrain-9", "-")
	if code != 0 {
		t.Fatalf("the help's example state does not load: exit %d: %s\n%s", code, errOut, strings.Join(state, "\n"))
	}
	for _, want := range []string{"h100-1k", "pretrain-9", "quota: queue train", "max 64"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
