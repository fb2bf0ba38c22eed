// Command kueue-manager runs Kueue's core: its ClusterQueue, Cohort,
// LocalQueue, ResourceFlavor, WorkloadPriorityClass and Workload controllers
// and its scheduler, built from the sigs.k8s.io/kueue module at the version
// this module's go.mod requires. It leaves out what the conformance harness
// does not exercise (webhooks, job integrations, admission checks' external
// controllers, MultiKueue, visibility server), which keeps the build to one
// small binary, as Kueue's own scheduler performance test does.
//
// Usage:
//
//	KUBECONFIG=FILE kueue-manager [-fair-sharing] [-zap-log-level=error]
//
// -fair-sharing enables Kueue's fair sharing (Configuration.fairSharing with
// the default preemption strategies); without it Kueue uses classical
// preemption and ignores fairSharing weights.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueuealpha "sigs.k8s.io/kueue/apis/kueue/v1alpha1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/constants"
	"sigs.k8s.io/kueue/pkg/controller/core"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
)

func main() {
	fairSharing := flag.Bool("fair-sharing", false, "enable Kueue's fair sharing")
	logOpts := zap.Options{Development: true}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
	if err := run(*fairSharing); err != nil {
		fmt.Fprintln(os.Stderr, "kueue-manager:", err)
		os.Exit(1)
	}
}

func run(fairSharing bool) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kueue.AddToScheme(scheme))
	utilruntime.Must(kueuealpha.AddToScheme(scheme))
	utilruntime.Must(configapi.AddToScheme(scheme))

	cfg := &configapi.Configuration{}
	if fairSharing {
		cfg.FairSharing = &configapi.FairSharing{PreemptionStrategies: []configapi.PreemptionStrategy{
			configapi.LessThanOrEqualToFinalShare, configapi.LessThanInitialShare,
		}}
	}

	kubeConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	kubeConfig.QPS, kubeConfig.Burst = 100, 200
	mgr, err := ctrl.NewManager(kubeConfig, ctrl.Options{
		Scheme:     scheme,
		Controller: crconfig.Controller{SkipNameValidation: ptr.To(true)},
		Metrics:    metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}

	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), ctrl.Log))
	defer cancel()
	go func() {
		sig := make(chan os.Signal, 2)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		cancel()
	}()

	if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("indexers: %w", err)
	}
	var cacheOpts []schdcache.Option
	if cfg.FairSharing != nil {
		cacheOpts = append(cacheOpts, schdcache.WithFairSharing(true))
	}
	cache := schdcache.New(mgr.GetClient(), cacheOpts...)
	requeuer := qcache.NewRequeuer()
	if err := mgr.Add(requeuer); err != nil {
		return fmt.Errorf("requeuer: %w", err)
	}
	expectations := preemptexpectations.New()
	queues := qcache.NewManager(mgr.GetClient(), cache, requeuer, qcache.WithPreemptionExpectations(expectations))
	go queues.CleanUpOnContext(ctx)
	go cache.CleanUpOnContext(ctx)

	if name, err := core.SetupControllers(mgr, queues, cache, cfg, nil, expectations, nil); err != nil {
		return fmt.Errorf("controller %s: %w", name, err)
	}
	//lint:ignore SA1019 Kueue v0.17's scheduler.New takes the old events API's recorder.
	sched := scheduler.New(queues, cache, mgr.GetClient(), mgr.GetEventRecorderFor(constants.AdmissionName),
		scheduler.WithFairSharing(cfg.FairSharing),
		scheduler.WithPreemptionExpectations(expectations))
	if err := mgr.Add(sched); err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	return mgr.Start(ctx)
}
