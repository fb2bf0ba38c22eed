package nvml

import "testing"

func TestModelName(t *testing.T) {
	extra := map[string]string{"NVIDIA H100 80GB HBM3": "H100", "nvidia h20": "H20-custom"}
	for _, tc := range []struct {
		name  string
		extra map[string]string
		want  string
		known bool
	}{
		{"NVIDIA H100 80GB HBM3", nil, "H100-SXM5-80GB", true},
		{"nvidia h100 80gb hbm3", nil, "H100-SXM5-80GB", true},
		{"NVIDIA H200", nil, "H200-SXM5-141GB", true},
		{"NVIDIA H200 141GB HBM3e", nil, "H200-SXM5-141GB", true}, // go-nvml's mock spelling
		{"NVIDIA B200 180GB HBM3e", nil, "B200-SXM6-180GB", true},
		{"NVIDIA B200", nil, "B200-SXM6-180GB", true},
		{"NVIDIA GB200", nil, "GB200-186GB", true},
		{"NVIDIA A100-SXM4-80GB", nil, "A100-SXM4-80GB", true},
		{"NVIDIA A100 80GB PCIe", nil, "A100-PCIE-80GB", true},
		{"NVIDIA L40S", nil, "L40S-48GB", true},
		{" Tesla T4 ", nil, "T4", true},
		{"Tesla V100-SXM2-32GB", nil, "V100M32", true},
		{"NVIDIA H100 80GB HBM3", extra, "H100", true},
		{"NVIDIA H20", extra, "H20-custom", true}, // case-insensitive extra
		{"NVIDIA RTX A6000", nil, "RTX-A6000", false},
		{"Mock NVIDIA A100-SXM4-40GB", nil, "Mock-NVIDIA-A100-SXM4-40GB", false},
		{"NVIDIA GeForce RTX 4090 (rev a1)", nil, "GeForce-RTX-4090-rev-a1", false},
		{"  ", nil, "unknown-gpu", false},
	} {
		got, known := ModelName(tc.name, tc.extra)
		if got != tc.want || known != tc.known {
			t.Errorf("ModelName(%q) = %q, %v; want %q, %v", tc.name, got, known, tc.want, tc.known)
		}
	}
}

// Every machine preset's accelerator is reachable from an NVML name.
func TestModelNamesCoverPresets(t *testing.T) {
	names := map[string]bool{}
	for _, e := range modelNames {
		names[e.model] = true
	}
	for _, m := range []string{"A100-SXM4-80GB", "H100-SXM5-80GB", "H200-SXM5-141GB", "B200-SXM6-180GB", "GB200-186GB", "L40S-48GB"} {
		if !names[m] {
			t.Errorf("no NVML name maps to preset model %s", m)
		}
	}
}
