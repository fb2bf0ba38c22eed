package nvml

import (
	"slices"
	"strings"
)

// modelNames maps NVML product names to the model names the presets and
// cluster files use. Keys are compared case-insensitively after the
// "NVIDIA " prefix is removed. Several NVML spellings may name one model:
// the drivers' names ("NVIDIA H200") and the fuller names some tools and
// go-nvml's mock servers use ("NVIDIA H200 141GB HBM3e").
//
// The model names spell out form factor and memory (H100-SXM5-80GB) where
// NVML's name leaves them implicit, so that an SXM and a PCIe card of one
// generation are different models to the scheduler.
var modelNames = []struct {
	nvml  []string
	model string
}{
	{[]string{"A100-SXM4-40GB"}, "A100-SXM4-40GB"},
	{[]string{"A100-SXM4-80GB"}, "A100-SXM4-80GB"},
	{[]string{"A100-PCIE-40GB"}, "A100-PCIE-40GB"},
	{[]string{"A100 80GB PCIe", "A100-PCIE-80GB"}, "A100-PCIE-80GB"},
	{[]string{"A30", "A30-PCIE-24GB"}, "A30-24GB"},
	{[]string{"A10"}, "A10"},
	{[]string{"A40"}, "A40-48GB"},
	{[]string{"H100 80GB HBM3"}, "H100-SXM5-80GB"},
	{[]string{"H100 PCIe"}, "H100-PCIE-80GB"},
	{[]string{"H100 NVL"}, "H100-NVL-94GB"},
	{[]string{"H800"}, "H800-SXM5-80GB"},
	{[]string{"H200", "H200 141GB HBM3e"}, "H200-SXM5-141GB"},
	{[]string{"H200 NVL"}, "H200-NVL-141GB"},
	{[]string{"H20"}, "H20-96GB"},
	{[]string{"B200", "B200 180GB HBM3e"}, "B200-SXM6-180GB"},
	{[]string{"GB200"}, "GB200-186GB"},
	{[]string{"L40S"}, "L40S-48GB"},
	{[]string{"L40"}, "L40-48GB"},
	{[]string{"L4"}, "L4-24GB"},
	{[]string{"Tesla T4", "T4"}, "T4"},
	{[]string{"Tesla V100-SXM2-16GB"}, "V100M16"},
	{[]string{"Tesla V100-SXM2-32GB"}, "V100M32"},
	{[]string{"Tesla P100-PCIE-16GB"}, "P100"},
}

// ModelName returns the accelerator model name for an NVML product name,
// using extra first (exact names, compared case-insensitively, as in
// Options.Models) and then the built-in table:
//
//	NVML name                                   model
//	NVIDIA A100-SXM4-40GB                       A100-SXM4-40GB
//	NVIDIA A100-SXM4-80GB                       A100-SXM4-80GB
//	NVIDIA A100-PCIE-40GB                       A100-PCIE-40GB
//	NVIDIA A100 80GB PCIe                       A100-PCIE-80GB
//	NVIDIA A30                                  A30-24GB
//	NVIDIA A10                                  A10
//	NVIDIA A40                                  A40-48GB
//	NVIDIA H100 80GB HBM3                       H100-SXM5-80GB
//	NVIDIA H100 PCIe                            H100-PCIE-80GB
//	NVIDIA H100 NVL                             H100-NVL-94GB
//	NVIDIA H800                                 H800-SXM5-80GB
//	NVIDIA H200, NVIDIA H200 141GB HBM3e        H200-SXM5-141GB
//	NVIDIA H200 NVL                             H200-NVL-141GB
//	NVIDIA H20                                  H20-96GB
//	NVIDIA B200, NVIDIA B200 180GB HBM3e        B200-SXM6-180GB
//	NVIDIA GB200                                GB200-186GB
//	NVIDIA L40S                                 L40S-48GB
//	NVIDIA L40                                  L40-48GB
//	NVIDIA L4                                   L4-24GB
//	Tesla T4                                    T4
//	Tesla V100-SXM2-16GB, Tesla V100-SXM2-32GB  V100M16, V100M32 (the Alibaba trace's names)
//	Tesla P100-PCIE-16GB                        P100
//
// A name in neither is sanitised: the "NVIDIA " prefix is dropped and every
// run of characters other than letters, digits, '.', '+' and '-' becomes
// one '-' ("NVIDIA RTX A6000" → "RTX-A6000"). The second result reports
// whether a table knew the name.
func ModelName(nvmlName string, extra map[string]string) (string, bool) {
	name := strings.TrimSpace(nvmlName)
	if v := extra[name]; v != "" {
		return v, true
	}
	if len(extra) > 0 {
		keys := make([]string, 0, len(extra))
		for k := range extra {
			keys = append(keys, k)
		}
		slices.Sort(keys) // the same answer whichever way the map iterates
		for _, k := range keys {
			if strings.EqualFold(k, name) && extra[k] != "" {
				return extra[k], true
			}
		}
	}
	key := trimVendor(name)
	for _, e := range modelNames {
		for _, n := range e.nvml {
			if strings.EqualFold(n, key) {
				return e.model, true
			}
		}
	}
	return sanitiseModel(key), false
}

func trimVendor(name string) string {
	if len(name) >= 7 && strings.EqualFold(name[:7], "NVIDIA ") {
		return strings.TrimSpace(name[7:])
	}
	return name
}

func sanitiseModel(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '+' || r == '-'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		b.WriteRune(r)
		dash = r == '-'
	}
	out := strings.TrimRight(b.String(), "-")
	if out == "" {
		return "unknown-gpu"
	}
	return out
}
