package plugin

import (
	"os"
	"regexp"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestDocsDRAExamples (issue 27, deliver 7): every Kubernetes object of
// docs/dra.md's worked examples (pods, ResourceClaims and their
// templates) decodes strictly as the API's own types (no unknown or
// misspelt field), names NVIDIA's device classes as the page installs
// them (other drivers' classes are the reader's), and its CEL selectors
// compile. Fragments without apiVersion and kind (a claim's
// status as it reads afterwards) and NVIDIA's own kinds (ComputeDomain)
// are left out.
func TestDocsDRAExamples(t *testing.T) {
	const doc = "../../../docs/dra.md"
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatchIndex(text, -1)
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	classes := map[string]bool{DefaultDRADeviceClass: true, DefaultDRAMIGDeviceClass: true}
	kinds := map[string]int{}
	for _, blk := range blocks {
		line := strings.Count(text[:blk[0]], "\n") + 1 // the block's first line
		for j, obj := range regexp.MustCompile(`(?m)^---$`).Split(text[blk[2]:blk[3]], -1) {
			if !strings.Contains(obj, "apiVersion:") || !strings.Contains(obj, "\nkind:") && !strings.HasPrefix(obj, "kind:") {
				continue
			}
			if strings.Contains(obj, "apiVersion: resource.nvidia.com/") {
				kinds["ComputeDomain (not decoded)"]++
				continue
			}
			o, gvk, err := decoder.Decode([]byte(obj), nil, nil)
			if err != nil {
				t.Errorf("%s:%d: yaml object %d of the block: %v", doc, line, j+1, err)
				continue
			}
			kinds[gvk.Kind]++
			var spec *resourceapi.ResourceClaimSpec
			switch x := o.(type) {
			case *resourceapi.ResourceClaim:
				spec = &x.Spec
			case *resourceapi.ResourceClaimTemplate:
				spec = &x.Spec.Spec
			}
			if spec != nil {
				checkDocClaim(t, doc, line, gvk.Kind, spec, classes)
			}
		}
	}
	// A pod, whole GPUs (by count, from a template, a named claim), with
	// CEL, MIG, a share and a ComputeDomain: each request kind has its
	// example.
	for kind, n := range map[string]int{"Pod": 2, "ResourceClaimTemplate": 5, "ResourceClaim": 1, "ComputeDomain (not decoded)": 1} {
		if kinds[kind] < n {
			t.Errorf("%s: %d %s examples, want at least %d (decoded: %v)", doc, kinds[kind], kind, n, kinds)
		}
	}
}

// checkDocClaim checks one claim spec of the page: NVIDIA's device
// classes spelt as installed, and selectors that compile.
func checkDocClaim(t *testing.T, doc string, line int, kind string, spec *resourceapi.ResourceClaimSpec, classes map[string]bool) {
	t.Helper()
	for _, r := range spec.Devices.Requests {
		if r.Exactly == nil {
			t.Errorf("%s:%d: %s request %s: not an exactly request", doc, line, kind, r.Name)
			continue
		}
		if c := r.Exactly.DeviceClassName; !classes[c] && strings.Contains(c, "nvidia") {
			t.Errorf("%s:%d: %s request %s: device class %q, not one of NVIDIA's the page installs", doc, line, kind, r.Name, c)
		}
		for _, s := range r.Exactly.Selectors {
			if s.CEL == nil {
				continue
			}
			if res := celCache.GetOrCompile(s.CEL.Expression); res.Error != nil {
				t.Errorf("%s:%d: %s request %s: CEL %q: %v", doc, line, kind, r.Name, s.CEL.Expression, res.Error)
			}
		}
	}
}
