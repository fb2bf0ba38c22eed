package conformance

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	apiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// apiserver is an etcd and a kube-apiserver running in the test process;
// Kueue's manager runs beside them as a separate process.
type apiserver struct {
	client     kubernetes.Interface
	dyn        dynamic.Interface
	kubeconfig string
}

// listenLocal returns n free 127.0.0.1 ports.
func listenLocal(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// runEtcd starts an embedded etcd (no binary needed) and returns its
// client URL.
func runEtcd(t *testing.T) string {
	t.Helper()
	var last error
	for range 5 {
		ports, err := listenLocal(2)
		if err != nil {
			t.Fatal(err)
		}
		cfg := embed.NewConfig()
		cfg.Name = "kueue-conformance"
		cfg.Dir = filepath.Join(t.TempDir(), "etcd")
		cfg.UnsafeNoFsync = true
		client := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ports[0])}
		peer := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ports[1])}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zaptest.NewLogger(t, zaptest.Level(zapcore.ErrorLevel)))
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			last = err
			continue
		}
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(time.Minute):
			e.Close()
			t.Fatal("etcd not ready after a minute")
		}
		t.Cleanup(e.Close)
		return client.String()
	}
	t.Fatalf("etcd: %v", last)
	return ""
}

// startAPIServer starts etcd and kube-apiserver (its own test-server
// helper) and stops both when the test ends.
func startAPIServer(t *testing.T) *apiserver {
	t.Helper()
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{runEtcd(t)}
	opts := apiservertesting.NewDefaultTestServerOptions()
	opts.DisableInvariantChecks = true
	srv, err := apiservertesting.StartTestServer(t, opts, []string{
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
	}, storage)
	if err != nil {
		t.Fatalf("kube-apiserver: %v", err)
	}
	t.Cleanup(srv.TearDownFn)
	cfg := rest.CopyConfig(srv.ClientConfig)
	cfg.QPS, cfg.Burst = 200, 400
	a := &apiserver{kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	if a.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if a.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if err := saveKubeconfig(a.kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	return a
}

// saveKubeconfig writes cfg as a kubeconfig for the manager process.
func saveKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.TLSClientConfig.CAData,
		TLSServerName: cfg.TLSClientConfig.ServerName, InsecureSkipTLSVerify: cfg.TLSClientConfig.Insecure}
	kc.AuthInfos["local"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.TLSClientConfig.CertData, ClientKeyData: cfg.TLSClientConfig.KeyData}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "local"}
	kc.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return os.Chmod(path, 0o600)
}
