package e2e

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	apiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// controlPlane is an etcd and a kube-apiserver running inside the test
// process. Nothing else of Kubernetes runs: no controller manager, no kubelet,
// so Nodes are plain objects the test creates and Pods stay Pending after
// they are bound.
type controlPlane struct {
	Client     kubernetes.Interface
	Config     *rest.Config
	Kubeconfig string // a kubeconfig file for a scheduler in another process
}

// etcdPortLock serialises picking free ports and binding them.
var etcdPortLock sync.Mutex

// startEtcd runs an embedded etcd server (go.etcd.io/etcd/server/v3/embed) in
// this process, so the tests need no etcd binary. It returns the client URL.
func startEtcd(t testing.TB) string {
	t.Helper()
	etcdPortLock.Lock()
	defer etcdPortLock.Unlock()

	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		cfg := embed.NewConfig()
		cfg.Name = "e2e"
		cfg.Dir = filepath.Join(t.TempDir(), "etcd")
		cfg.UnsafeNoFsync = true // a throw-away single member
		ports, err := freePorts(2)
		if err != nil {
			t.Fatalf("etcd: %v", err)
		}
		client := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
		peer := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(
			zaptest.NewLogger(t, zaptest.Level(zapcore.ErrorLevel), zaptest.WrapOptions(zap.AddCaller())).Named("etcd"))

		e, err := embed.StartEtcd(cfg)
		if err != nil {
			lastErr = err // most likely a port taken between freePorts and bind
			continue
		}
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(60 * time.Second):
			e.Close()
			t.Fatal("etcd: not ready after 60s")
		}
		t.Cleanup(e.Close)
		return client.String()
	}
	t.Fatalf("etcd: %v", lastErr)
	return ""
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startControlPlane starts etcd and kube-apiserver with the apiserver's own
// test server helper and stops both when the test ends; extra are more
// kube-apiserver flags (e.g. --runtime-config).
func startControlPlane(t testing.TB, extra ...string) *controlPlane {
	t.Helper()
	etcdURL := startEtcd(t)

	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}

	flags := []string{
		// No controller manager creates the "default" service account.
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
	}
	flags = append(flags, extra...)
	opts := apiservertesting.NewDefaultTestServerOptions()
	// The invariant checks scrape metrics this test does not care about.
	opts.DisableInvariantChecks = true
	server, err := apiservertesting.StartTestServer(t, opts, flags, storage)
	if err != nil {
		t.Fatalf("kube-apiserver: %v", err)
	}
	t.Cleanup(server.TearDownFn)

	cfg := rest.CopyConfig(server.ClientConfig)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := writeKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	return &controlPlane{Client: client, Config: cfg, Kubeconfig: kubeconfig}
}

// writeKubeconfig writes cfg (the apiserver's loopback config: a bearer token
// and the serving CA) as a kubeconfig file.
func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.TLSClientConfig.CAData,
		TLSServerName:            cfg.TLSClientConfig.ServerName,
		InsecureSkipTLSVerify:    cfg.TLSClientConfig.Insecure,
	}
	kc.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.TLSClientConfig.CertData,
		ClientKeyData:         cfg.TLSClientConfig.KeyData,
	}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	kc.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return os.Chmod(path, 0o600)
}

// waitFor polls cond every 100ms until it returns true, an error, or timeout.
func waitFor(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
