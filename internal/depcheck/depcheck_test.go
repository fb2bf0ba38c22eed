package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoKubernetesDependency fails if any k8s.io module is in the root
// module's build list (`go list -m all`).
func TestNoKubernetesDependency(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	cmd := exec.Command(goBin, "list", "-m", "all")
	cmd.Dir = "../.." // the root module
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -m all: %v\n%s", err, msg)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "github.com/gpusched/gpusched") {
		t.Fatalf("go list -m all: first module is %q, want the root module", lines[0])
	}
	for _, l := range lines[1:] {
		mod := strings.Fields(l)[0]
		if strings.HasPrefix(mod, "k8s.io/") || strings.HasPrefix(mod, "sigs.k8s.io/") {
			t.Errorf("root module depends on %s; Kubernetes code belongs in integrations/kube-scheduler", l)
		}
	}
}
