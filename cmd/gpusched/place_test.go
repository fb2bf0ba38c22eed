package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of stdout, in order
		fail bool     // does not fit: exit status 1, stderr says so
	}{
		{"tor gang", []string{"place", "--preset", "h100-1k", "--gpus", "64", "--require", "tor"},
			[]string{"1000 free", "placed job cli with topology: 8 tasks on 64 GPUs of 8 hosts, all in tor tor4", "tor4:", "dgx-h100-097", "gpu0-7", "task 0"}, false},
		{"fragmented", []string{"place", "--preset", "h100-1k", "--fill", "0.5", "--seed", "7", "--gpus", "16", "--require", "tor", "--policy", "best-fit"},
			[]string{"filled 507 GPUs at random", "does not fit: job cli: needs 16 GPUs (2 tasks) in one tor", "fragmentation"}, true},
		{"nvlink short", []string{"place", "--preset", "h100-1k", "--fill", "0.5", "--seed", "7", "--gpus", "8", "--require", "nvlink"},
			[]string{"in one nvlink", "has 7 free (1 short)"}, true},
		{"pcie socket", []string{"place", "--preset", "pcie-8gpu", "--tasks", "1", "--gpus-per-task", "4"},
			[]string{"pcie-8gpu-1", "gpu0-3"}, false},
		{"relaxed", []string{"place", "--preset", "h100-1k", "--gpus", "16", "--prefer", "nvlink", "--policy", "first-fit"},
			[]string{"preferred levels not honoured: nvlink", "tor1:"}, false},
		{"share", []string{"place", "--preset", "dgx-h100", "--share", "300", "--tasks", "4"},
			[]string{"4 tasks on 2 GPUs", "gpu0 (300m)", "gpu1 (300m)"}, false},
		{"mig", []string{"place", "--preset", "dgx-h100", "--mig", "1g.10gb", "--tasks", "2"},
			[]string{"gpu0 mig 1g.10gb@6"}, false},
		{"elastic", []string{"place", "--preset", "dgx-h100", "--tasks", "3", "--gpus-per-task", "4", "--min-tasks", "1"},
			[]string{"2 tasks on 8 GPUs"}, false},
		{"fgd", []string{"place", "--preset", "h100-1k", "--policy", "fgd", "--gpus", "4", "--fill", "0.3"},
			[]string{"placed job cli with fgd: 1 task on 4 GPUs"}, false},
		{"too large", []string{"place", "--preset", "h100-1k", "--gpus", "512", "--require", "tor"},
			[]string{"the largest tor has 256 GPUs", "too large"}, true},
		{"task larger than a host", []string{"place", "--preset", "h100-1k", "--tasks", "1", "--gpus-per-task", "9"},
			[]string{"a task needs 9 GPUs, the largest host has 8 GPUs", ": too large"}, true},
		{"task with more cores than a host", []string{"place", "--preset", "h100-1k", "--gpus", "1", "--cpu", "999999999"},
			[]string{"a task needs 999999.999 cores", ": too large; hosts excluded by cpu 125"}, true},
		{"task with more memory than a host", []string{"place", "--preset", "h100-1k", "--gpus", "1", "--memory", "99999999999"},
			[]string{"a task needs 99999999999 MiB memory", ": too large; hosts excluded by memory 125"}, true},
		{"one gpu on its host", []string{"place", "--preset", "h100-1k", "--tasks", "1", "--gpus-per-task", "1"},
			[]string{"1 task on 1 GPU of 1 host, all in host dgx-h100-001", "dgx-h100-001", "gpu0"}, false},
		{"two tasks on one host", []string{"place", "--preset", "h100-1k", "--tasks", "2", "--gpus-per-task", "4"},
			[]string{"2 tasks on 8 GPUs of 1 host, all in host dgx-h100-001"}, false},
		{"hccs group", []string{"place", "--preset", "ascend-910", "--tasks", "2", "--gpus-per-task", "1"},
			[]string{"2 tasks on 2 GPUs of 1 host, all in nvlink "}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := gpusched(t, "", tc.args...)
			switch {
			case !tc.fail && (code != 0 || errOut != ""):
				t.Fatalf("exit %d, stderr %q", code, errOut)
			case tc.fail && (code != 1 || !strings.Contains(errOut, "does not fit")):
				t.Fatalf("does not fit: exit %d, stderr %q, want 1 and the verdict", code, errOut)
			}
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestPlaceJSON(t *testing.T) {
	code, out, errOut := gpusched(t, "", "place", "--machine", "gb200-nvl72", "--hosts", "36", "--tasks", "16", "--gpus-per-task", "4", "--require", "nvlink", "-o", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var doc placeJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Placed || doc.Level != "nvlink" || len(doc.Tasks) != 16 {
		t.Fatalf("%+v", doc)
	}
	for _, task := range doc.Tasks {
		if task.Domain != doc.Domain || len(task.GPUs) != 4 {
			t.Fatalf("task %+v outside %s", task, doc.Domain)
		}
	}
	code, out, _ = gpusched(t, "", "place", "--preset", "h100-1k", "--gpus", "2000", "-o", "json")
	if code != 1 {
		t.Fatalf("a gang that does not fit: exit %d, want 1", code)
	}
	doc = placeJSON{}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Placed || doc.Explanation == nil || doc.Explanation.Verdict != "too large" || doc.Message == "" {
		t.Fatalf("%+v", doc)
	}
	// A task with more cores than any host: too large, limit cpu.
	code, out, _ = gpusched(t, "", "place", "--preset", "h100-1k", "--gpus", "1", "--cpu", "999999999", "-o", "json")
	doc = placeJSON{}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 {
		t.Fatal(code, err)
	}
	if x := doc.Explanation; x == nil || x.Verdict != "too large" || x.Limit != "cpu" || x.Group != 0 || x.TaskNeeds != 999999999 || x.HostHas <= 0 {
		t.Fatalf("%+v", x)
	}
	// Free cores for 2 of 3 tasks: capacity by cpu, with the room counted.
	code, out, _ = gpusched(t, "", "place", "--machine", "dgx-h100", "--hosts", "2", "--tasks", "3", "--gpus-per-task", "1", "--cpu", "150000", "-o", "json")
	doc = placeJSON{}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 {
		t.Fatal(code, err)
	}
	if x := doc.Explanation; x == nil || x.Verdict != "capacity" || x.Limit != "cpu" || x.Room == nil || *x.Room != 2 || x.RoomNeeds == nil || *x.RoomNeeds != 3 {
		t.Fatalf("%+v", x)
	}
	// A placement reports the tightest domain that holds it.
	code, out, _ = gpusched(t, "", "place", "--preset", "h100-1k", "--gpus", "1", "-o", "json")
	doc = placeJSON{}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatal(code, err)
	}
	if doc.Level != "host" || doc.Domain != "dgx-h100-001" {
		t.Fatalf("one GPU in %s %s, want host dgx-h100-001", doc.Level, doc.Domain)
	}
}

func TestPlaceErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"place"}, "say what to place"},
		{[]string{"place", "--gpus", "8", "--share", "500"}, "use one of"},
		{[]string{"place", "--gpus", "8", "--policy", "nope"}, `unknown policy "nope"`},
		{[]string{"place", "--gpus", "8", "--require", "rack"}, `topology[0].level: unknown level "rack"`},
		{[]string{"place", "--gpus", "8", "--model", "TPU"}, `groups[0].models[0]: unknown model "TPU"`},
		{[]string{"place", "--share", "1000"}, "groups[0].gpuMilli"},
		{[]string{"place", "--tasks", "2", "--gpus-per-task", "1", "--min-tasks", "3"}, "groups[0].minCount"},
		{[]string{"place", "--gpus", "8", "--fill", "2"}, "--fill 2 outside 0..1"},
		{[]string{"place", "--gpus", "8", "-o", "xml"}, `unknown --format "xml"`},
		{[]string{"place", "--gpus", "6", "--tasks", "4"}, "does not split"},
		{[]string{"place", "--gpus", "6", "--tasks", "2", "--gpus-per-task", "2"}, "is not --tasks 2"},
		{[]string{"place", "--gpus", "-1"}, "must be positive"},
		{[]string{"place", "--tasks", "0", "--gpus-per-task", "1"}, "--tasks 0: groups[0].count must be at least 1"},
		{[]string{"place", "--tasks", "0"}, "--tasks 0: groups[0].count"},
		{[]string{"place", "--gpus", "8", "--tasks", "0"}, "--tasks 0: groups[0].count"},
		{[]string{"place", "--tasks", "-2", "--share", "300"}, "--tasks -2: groups[0].count"},
		{[]string{"place", "--share", "0", "--tasks", "2"}, "--share 0: groups[0].gpuMilli must be 1..999"},
		{[]string{"place", "--share", "-5"}, "--share -5: groups[0].gpuMilli"},
		{[]string{"place", "--mig", ""}, "--mig: groups[0].migProfile must name a MIG profile"},
	} {
		code, _, errOut := gpusched(t, "", tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
}
