// Command kube-scheduler is the Kubernetes scheduler with the gpusched plugin
// registered: every flag, the configuration file format and the in-tree
// plugins are kube-scheduler's own; a profile that enables the GPUSched
// plugin (see ../../deploy) places GPU pods and gangs with gpusched.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
	os.Exit(cli.Run(cmd))
}
