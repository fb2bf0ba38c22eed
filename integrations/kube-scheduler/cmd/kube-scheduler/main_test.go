package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// TestDeployConfig checks that the example configuration in deploy/ is one
// kube-scheduler accepts and that its GPUSched args are valid.
func TestDeployConfig(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm v1.ConfigMap
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(cm.Data["scheduler-config.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, _ := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, file)
	if err != nil {
		t.Fatal(err)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, prof := range cfg.Profiles {
		for _, pc := range prof.PluginConfig {
			if pc.Name != plugin.Name {
				continue
			}
			found = true
			if _, err := plugin.DecodeArgs(pc.Args); err != nil {
				t.Errorf("profile %s: %v", prof.SchedulerName, err)
			}
		}
	}
	if !found {
		t.Errorf("no %s args in deploy/scheduler-config.yaml", plugin.Name)
	}
}

// TestDeployManifests checks that every manifest in deploy/ decodes as the
// Kubernetes objects it declares.
func TestDeployManifests(t *testing.T) {
	files, err := filepath.Glob("../../deploy/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(raw, []byte("\n---\n")) {
			if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil); err != nil {
				t.Errorf("%s document %d: %v", filepath.Base(f), i, err)
			}
		}
	}
}
