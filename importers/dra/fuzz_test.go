package dra

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// FuzzParse feeds arbitrary bytes to Parse and Build: they return a
// result or an error, never panic, and a result always builds; an error
// from Parse is an *Error naming the file.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"dgx-h100.yaml", "h200-mig.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec: {driver: gpu.nvidia.com, nodeName: n, devices: [{name: gpu-0, attributes: {productName: {string: x}, index: {int: 3}}}]}\n"))
	f.Add([]byte("kind: List\nitems: [{kind: List}, 3]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Parse("f.yaml", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != "f.yaml" {
				t.Fatalf("error %v is not an *Error naming the file", err)
			}
			return
		}
		res, err := Build(objs, Options{})
		if err != nil {
			return
		}
		if _, err := topology.Build(res.Spec); err != nil {
			t.Fatalf("built spec does not build: %v", err)
		}
	})
}
