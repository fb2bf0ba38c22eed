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

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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
			switch gvk.Kind {
			case "ConfigMap":
				checkConfigMap(t, f, &u)
			case "Deployment":
				checkReplicasSpread(t, f, &u)
			}
		}
	}
}

// checkReplicasSpread checks that a Deployment of more than one replica
// keeps its replicas on different nodes: a pod anti-affinity term on
// kubernetes.io/hostname whose selector matches the pod template's labels
// (else the leader and its standby may share a node, and losing it stops
// scheduling until both are rescheduled).
func checkReplicasSpread(t *testing.T, file string, u *unstructured.Unstructured) {
	t.Helper()
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
		t.Errorf("%s: Deployment %s: %v", file, u.GetName(), err)
		return
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("%s: Deployment %s: %v replicas, want at least 2 (a standby)", file, d.Name, d.Spec.Replicas)
		return
	}
	var terms []v1.PodAffinityTerm
	if a := d.Spec.Template.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	own := labels.Set(d.Spec.Template.Labels)
	for _, term := range terms {
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			t.Errorf("%s: Deployment %s: anti-affinity selector: %v", file, d.Name, err)
			continue
		}
		if term.TopologyKey == v1.LabelHostname && !sel.Empty() && sel.Matches(own) {
			return
		}
	}
	t.Errorf("%s: Deployment %s: %d replicas and no pod anti-affinity on %s between them", file, d.Name, *d.Spec.Replicas, v1.LabelHostname)
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
