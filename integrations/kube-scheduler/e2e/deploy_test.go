package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// TestDeployManifests applies every manifest in deploy/ to a real
// kube-apiserver with server-side dry run (the apiserver validates and
// admits each object, and stores nothing), and loads each scheduler
// configuration they carry the way kube-scheduler does, with the GPUSched
// args decoded and validated and the queue trees parsed.
func TestDeployManifests(t *testing.T) {
	files, err := filepath.Glob("../deploy/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in ../deploy (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := startControlPlane(t)
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cp.Client.Discovery()))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for n := 0; ; n++ {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: document %d: %v", f, n, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			gvk := u.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Errorf("%s: %s %s: %v", f, gvk.Kind, u.GetName(), err)
				continue
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == "namespace" {
				ns := u.GetNamespace()
				if ns == "" {
					ns = "default"
				}
				ri = dyn.Resource(m.Resource).Namespace(ns)
			}
			if _, err := ri.Create(ctx, &u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}); err != nil {
				t.Errorf("%s: dry-run create %s %s: %v", f, gvk.Kind, u.GetName(), err)
			}
			if gvk.Kind == "ConfigMap" {
				checkConfigMap(t, f, &u)
			}
		}
	}
}

// checkConfigMap loads the scheduler configuration or queue tree a
// ConfigMap carries.
func checkConfigMap(t *testing.T, file string, u *unstructured.Unstructured) {
	t.Helper()
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	if cfg, ok := data["scheduler-config.yaml"]; ok {
		p := writeFile(t, "scheduler-config.yaml", cfg)
		sc, err := options.LoadConfigFromFile(ktesting.NewLogger(t, ktesting.NewConfig()), p)
		if err != nil {
			t.Errorf("%s: %s: %v", file, u.GetName(), err)
			return
		}
		found := 0
		for _, prof := range sc.Profiles {
			for _, pc := range prof.PluginConfig {
				if pc.Name != plugin.Name {
					continue
				}
				found++
				if _, err := plugin.DecodeArgs(pc.Args); err != nil {
					t.Errorf("%s: profile %s: %v", file, prof.SchedulerName, err)
				}
			}
		}
		if found == 0 {
			t.Errorf("%s: %s configures no %s profile", file, u.GetName(), plugin.Name)
		}
	}
	if q, ok := data[plugin.QueueConfigMapKey]; ok {
		if _, err := plugin.ParseQueueConfig([]byte(q), file); err != nil {
			t.Errorf("%v", err)
		}
		if strings.TrimSpace(q) == "" {
			t.Errorf("%s: empty queue tree", file)
		}
	}
}
