package plugin

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestDecodeArgsDefaults(t *testing.T) {
	a, err := DecodeArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Policy != "topology" || a.GPUResource != "nvidia.com/gpu" || a.GangTimeoutSeconds != 60 ||
		a.GPUIndicesAnnotation != DefaultGPUIndicesAnnotation || a.MachineTemplates[h100] != "dgx-h100" || len(a.Workload) != 4 {
		t.Errorf("defaults not filled: %+v", a)
	}
}

func TestDecodeArgsFromConfig(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, raw string
	}{
		{"json", runtime.ContentTypeJSON, `{"policy":"fgd","topologyLevels":[{"name":"tor","nodeLabel":"example.com/tor"}],"workload":[{"gpus":8,"weight":2}],"machineTemplates":{"X":"pcie-8gpu"}}`},
		{"yaml", runtime.ContentTypeYAML, "policy: fgd\ntopologyLevels:\n- name: tor\n  nodeLabel: example.com/tor\nworkload:\n- {gpus: 8, weight: 2}\nmachineTemplates: {X: pcie-8gpu}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := DecodeArgs(&runtime.Unknown{Raw: []byte(tc.raw), ContentType: tc.contentType})
			if err != nil {
				t.Fatal(err)
			}
			if a.Policy != "fgd" || len(a.TopologyLevels) != 1 || a.TopologyLevels[0].NodeLabel != "example.com/tor" {
				t.Errorf("decoded %+v", a)
			}
			if len(a.Workload) != 1 || a.Workload[0].GPUs != 8 {
				t.Errorf("workload %+v", a.Workload)
			}
			// Given templates add to the defaults.
			if a.MachineTemplates["X"] != "pcie-8gpu" || a.MachineTemplates[h100] != "dgx-h100" {
				t.Errorf("machine templates %v", a.MachineTemplates)
			}
			if d := a.Distribution(); d.Validate() != nil || len(d.Classes) != 1 {
				t.Errorf("distribution %+v: %v", d, d.Validate())
			}
		})
	}
}

func TestDecodeArgsTyped(t *testing.T) {
	in := &Args{Policy: "best-fit"}
	a, err := DecodeArgs(in.DeepCopyObject())
	if err != nil {
		t.Fatal(err)
	}
	if a.Policy != "best-fit" || in.GPUResource != "" {
		t.Errorf("typed args: %+v (input modified: %+v)", a, in)
	}
}

func TestArgsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Args)
		field string // the field the error must name
	}{
		{"unknown policy", func(a *Args) { a.Policy = "magic" }, "policy"},
		{"bad resource", func(a *Args) { a.GPUResource = "not a name" }, "gpuResource"},
		{"reserved level", func(a *Args) { a.TopologyLevels = []TopologyLevel{{Name: "host", NodeLabel: "x/y"}} }, "topologyLevels[0].name"},
		{"duplicate level", func(a *Args) {
			a.TopologyLevels = []TopologyLevel{{Name: "tor", NodeLabel: "x/a"}, {Name: "tor", NodeLabel: "x/b"}}
		}, "topologyLevels[1].name"},
		{"slash in level", func(a *Args) { a.TopologyLevels = []TopologyLevel{{Name: "a/b", NodeLabel: "x/a"}} }, "topologyLevels[0].name"},
		{"no label", func(a *Args) { a.TopologyLevels = []TopologyLevel{{Name: "tor"}} }, "topologyLevels[0].nodeLabel"},
		{"duplicate label", func(a *Args) {
			a.TopologyLevels = []TopologyLevel{{Name: "spine", NodeLabel: "x/a"}, {Name: "tor", NodeLabel: "x/a"}}
		}, "topologyLevels[1].nodeLabel"},
		{"timeout", func(a *Args) { a.GangTimeoutSeconds = -1 }, "gangTimeoutSeconds"},
		{"machine", func(a *Args) { a.MachineTemplates = map[string]string{"P": "cray-1"} }, "machineTemplates[P]"},
		{"workload gpus", func(a *Args) { a.Workload = []WorkloadClass{{GPUs: 0, Weight: 1}} }, "workload[0].gpus"},
		{"workload weight", func(a *Args) { a.Workload = []WorkloadClass{{GPUs: 1, Weight: 0}} }, "workload[0].weight"},
		{"annotation", func(a *Args) { a.GPUIndicesAnnotation = "bad key!" }, "gpuIndicesAnnotation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Args{}
			a.SetDefaults()
			tc.edit(a)
			err := a.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
		})
	}
}
