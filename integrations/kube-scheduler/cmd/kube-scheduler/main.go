package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	cmd := app.NewSchedulerCommand()
	os.Exit(cli.Run(cmd))
}
