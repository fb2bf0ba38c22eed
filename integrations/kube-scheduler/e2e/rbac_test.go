package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// rbacFlags make the apiserver authorize requests by RBAC (its default
// here allows everything), so that a scheduler run under deploy/'s service
// account can do exactly what deploy/rbac.yaml grants.
var rbacFlags = []string{"--authorization-mode=RBAC"}

// asServiceAccount creates the objects of deploy/rbac.yaml (the service
// account, its roles and bindings) and returns a copy of cp whose
// kubeconfig authenticates as that service account with a token the
// apiserver issued (TokenRequest), as the pods of deploy/deployment.yaml
// do. cp's own client stays the administrator.
func asServiceAccount(ctx context.Context, t *testing.T, cp *controlPlane) *controlPlane {
	t.Helper()
	const file = "../deploy/rbac.yaml"
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cp.Client.Discovery()))
	var sa, saNS string
	for _, u := range readManifests(t, file) {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: %s %s: %v", file, gvk.Kind, u.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		if _, err := ri.Create(ctx, &u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: create %s %s: %v", file, gvk.Kind, u.GetName(), err)
		}
		if gvk.Kind == "ServiceAccount" {
			sa, saNS = u.GetName(), u.GetNamespace()
		}
	}
	if sa == "" {
		t.Fatalf("%s: no ServiceAccount", file)
	}
	tr, err := cp.Client.CoreV1().ServiceAccounts(saNS).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for service account %s/%s: %v", saNS, sa, err)
	}
	cfg := rest.AnonymousClientConfig(cp.Config)
	cfg.BearerToken = tr.Status.Token
	// RBAC is in force: the service account may not read secrets.
	saClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := saClient.CoreV1().Secrets(saNS).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("service account %s/%s listing secrets: %v, want forbidden (is RBAC on?)", saNS, sa, err)
	}
	out := *cp
	out.Client, out.Config = saClient, cfg
	out.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig-"+sa)
	if err := writeKubeconfig(out.Kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	return &out
}

// checkNotForbidden fails if a scheduler's log shows a request the
// apiserver refused for want of a permission.
func checkNotForbidden(t *testing.T, procs ...*schedulerProcess) {
	t.Helper()
	for _, sp := range procs {
		b, err := os.ReadFile(sp.log)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "forbidden") {
				t.Errorf("%s: a request refused by RBAC: %s", filepath.Base(filepath.Dir(sp.log)), l)
			}
		}
	}
}
