package kube

import (
	"os"
	"path/filepath"
	"testing"
)

// seeds adds every testdata file under dirs to f's corpus.
func seeds(f *testing.F, dirs ...string) {
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join("testdata", d, "*.yaml"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err == nil {
				f.Add(data)
			}
		}
	}
}

// fuzzRead checks that Read never panics and that what it accepts is a
// valid queue shape (names, limits) or a clear error.
func fuzzRead(t *testing.T, data []byte) {
	im, err := Read([]File{{Name: "fuzz.yaml", Data: data}})
	if err != nil {
		if err.Error() == "" {
			t.Fatal("empty error")
		}
		return
	}
	_ = im.Report()
	for _, q := range im.Queues.Root.Quotas {
		if q.Nominal < 0 {
			t.Fatalf("negative root quota %+v", q)
		}
	}
}

func FuzzKueue(f *testing.F) {
	seeds(f, "kueue/docs-single", "kueue/gpu-cohorts", "kueue/fair")
	f.Add([]byte("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x}\nspec: {parentName: x}\n"))
	f.Fuzz(fuzzRead)
}

func FuzzVolcano(f *testing.F) {
	seeds(f, "volcano/docs", "volcano/hierarchy")
	f.Fuzz(fuzzRead)
}

func FuzzKAI(f *testing.F) {
	seeds(f, "kai/docs", "kai/departments")
	f.Fuzz(fuzzRead)
}

// FuzzDump reads a fuzzed dump against the gpu-cohorts configuration and
// loads the state it gives.
func FuzzDump(f *testing.F) {
	seeds(f, "dump")
	im, err := ReadDir("testdata/kueue/gpu-cohorts")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, _, err := ReadDump([]File{{Name: "dump.yaml", Data: data}}, im, DumpOptions{})
		if err != nil {
			return
		}
		if len(st.Cluster.Spec.Hosts) > 200 {
			return // building huge fuzzed clusters is slow, not wrong
		}
		_, _, _ = Load(st, loadOptions())
	})
}
