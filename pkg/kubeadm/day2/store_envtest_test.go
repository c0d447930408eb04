//go:build !windows

// envtest cannot build for Windows (kept_envtest_test.go).

package day2

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"

	"github.com/machineadm/machineadm/internal/testassets"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// TestStoreConfigurationSaysWhatTheConfigMapCarries: storeConfiguration's
// "stored" is whether kubeadm's uploadconfig changed the kubeadm-config
// ConfigMap, on a real API server behind a proxy that refuses some of
// kubeadm's requests:
//   - a store that updated the ConfigMap and was refused at the Role says
//     stored beside the error and in it;
//   - so does one whose first request was refused;
//   - a store refused at the ConfigMap while another writer changed the
//     ConfigMap says not stored, also when the other writer stored the
//     same configuration;
//   - a store into a ConfigMap that carries the configuration already
//     says not stored (nothing changed), also when a request failed
//     before and the store failed after, and when kubeadm's create got no
//     answer (kubeadm's next read finds what it sent, there already);
//   - a store whose update's answer was lost says stored;
//   - a store that changes the ConfigMap says stored, one that finds it
//     carrying the configuration not, one that creates it stored.
func TestStoreConfigurationSaysWhatTheConfigMapCarries(t *testing.T) {
	spec := exampleInit(t, nil)
	shortAPICallTimeout(t)
	rc := testassets.StartEnvtest(t)
	old := strings.Replace(clusterConfigurationDoc(t, spec), "imageRepository: registry.demo.example/k8s", "imageRepository: registry.demo.example/old", 1)
	if !strings.Contains(old, "registry.demo.example/old") {
		t.Fatalf("the example's ClusterConfiguration has no imageRepository registry.demo.example/k8s:\n%s", old)
	}
	seedCluster(t, rc, old)
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	get := func(t *testing.T) string {
		t.Helper()
		cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, kubeadmconstants.KubeadmConfigConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data[kubeadmconstants.ClusterConfigurationConfigMapKey]
	}
	write := func(doc string) error {
		cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, kubeadmconstants.KubeadmConfigConfigMap, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data[kubeadmconstants.ClusterConfigurationConfigMapKey] = doc
		_, err = cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}
	set := func(t *testing.T, doc string) {
		t.Helper()
		if err := write(doc); err != nil {
			t.Fatal(err)
		}
	}
	// cfg is the cluster's configuration with the spec's settings, as
	// UploadSettings stores it.
	admin, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := fetchCluster(admin, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := SpecClusterConfiguration(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Overlay(cluster, sc)
	// want is what kubeadm's uploadconfig writes for cfg.
	if err := uploadConfiguration(cfg, admin, nil); err != nil {
		t.Fatal(err)
	}
	want := get(t)
	if want == old {
		t.Fatalf("kubeadm's store of the spec's settings left kubeadm-config as it was:\n%s", old)
	}
	wantErr := func(t *testing.T, err error) {
		t.Helper()
		if class, hint := errclass.Of(err); err == nil || class != errclass.ControlPlaneUnhealthy || hint != kubeadmConfigHint {
			t.Errorf("storeConfiguration: %v (class %s, hint %q); want %s with the kubeadm-config hint", err, class, hint, errclass.ControlPlaneUnhealthy)
		}
	}

	t.Run("refused at the Role", func(t *testing.T) {
		set(t, old)
		client := refusingClient(t, rc, func(r *http.Request) bool {
			return r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/roles")
		}, nil)
		stored, err := storeConfiguration(cfg, client, nil)
		wantErr(t, err)
		if got := get(t); got != want {
			t.Fatalf("kubeadm-config after a store refused at the Role:\n%s\nwant\n%s", got, want)
		}
		if !stored {
			t.Error("a store that updated kubeadm-config and was refused at the Role says it did not store")
		}
		// The outcome report records the error alone.
		if err == nil || !strings.Contains(err.Error(), "storing the cluster configuration in kubeadm-config: the kubeadm-config ConfigMap was updated, but: ") {
			t.Errorf("the error of a store that updated kubeadm-config does not say so: %v", err)
		}
	})

	t.Run("refused at the Role, the first request refused", func(t *testing.T) {
		set(t, old)
		// The first request is kubeadm's create of the ConfigMap, which it
		// retries.
		var n atomic.Int32
		client := refusingClient(t, rc, func(r *http.Request) bool {
			first := n.Add(1) == 1
			return first || r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/roles")
		}, nil)
		stored, err := storeConfiguration(cfg, client, nil)
		wantErr(t, err)
		if got := get(t); got != want {
			t.Fatalf("kubeadm-config after a store refused at the Role:\n%s\nwant\n%s", got, want)
		}
		if !stored {
			t.Error("a store that updated kubeadm-config and was refused at the Role says it did not store (its first request was refused)")
		}
	})

	t.Run("refused at the ConfigMap, another writer", func(t *testing.T) {
		set(t, old)
		other := strings.Replace(old, "registry.demo.example/old", "registry.demo.example/other", 1)
		var wrote atomic.Bool
		client := refusingClient(t, rc, func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/configmaps/"+kubeadmconstants.KubeadmConfigConfigMap)
		}, func() {
			// Another writer changes the ConfigMap while this store is
			// refused.
			if !wrote.Swap(true) {
				if err := write(other); err != nil {
					t.Errorf("the other writer: %v", err)
				}
			}
		})
		stored, err := storeConfiguration(cfg, client, nil)
		wantErr(t, err)
		if got := get(t); got != other {
			t.Fatalf("kubeadm-config after a refused store and another writer:\n%s\nwant the other writer's\n%s", got, other)
		}
		if stored {
			t.Error("a store refused at the ConfigMap says it stored (another writer changed the ConfigMap)")
		}
		if err != nil && strings.Contains(err.Error(), storedButFailed) {
			t.Errorf("the error of a store refused at the ConfigMap says it was updated: %v", err)
		}
	})

	t.Run("carried already, the first request refused, refused at the Role", func(t *testing.T) {
		// kubeadm's update leaves the ConfigMap as it was: a transient
		// failure of some request must not make it "updated".
		set(t, want)
		var n atomic.Int32
		client := refusingClient(t, rc, func(r *http.Request) bool {
			first := n.Add(1) == 1
			return first || r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/roles")
		}, nil)
		stored, err := storeConfiguration(cfg, client, nil)
		wantErr(t, err)
		if stored {
			t.Error("a store into a kubeadm-config that carried the configuration already says it stored")
		}
		if err != nil && strings.Contains(err.Error(), storedButFailed) {
			t.Errorf("the error of a store that changed nothing says kubeadm-config was updated: %v", err)
		}
	})

	t.Run("carried already, the create unanswered, refused at the Role", func(t *testing.T) {
		// kubeadm's first create gets no answer from the API server (a
		// load balancer's 503 while the API server restarts, the request
		// not passed on): it created nothing, the ConfigMap carried the
		// configuration already, and kubeadm's next read finds what the
		// create sent. Nothing changed.
		set(t, want)
		var unanswered atomic.Bool
		client := proxiedClient(t, rc, func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
			switch {
			case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/namespaces/kube-system/configmaps") && !unanswered.Swap(true):
				http.Error(w, "no server is available to handle this request", http.StatusServiceUnavailable)
			case r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/roles"):
				refuse(w)
			default:
				forward.ServeHTTP(w, r)
			}
		})
		stored, err := storeConfiguration(cfg, client, nil)
		wantErr(t, err)
		if !unanswered.Load() {
			t.Fatal("kubeadm's store did not create the ConfigMap")
		}
		if got := get(t); got != want {
			t.Fatalf("kubeadm-config after the store:\n%s\nwant\n%s", got, want)
		}
		if stored {
			t.Error("a store into a kubeadm-config that carried the configuration already says it stored (its create was not answered)")
		}
		if err != nil && strings.Contains(err.Error(), storedButFailed) {
			t.Errorf("the error of a store that changed nothing says kubeadm-config was updated: %v", err)
		}
	})

	t.Run("refused at the ConfigMap, another writer stores the same", func(t *testing.T) {
		set(t, old)
		var wrote atomic.Bool
		client := refusingClient(t, rc, func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/configmaps/"+kubeadmconstants.KubeadmConfigConfigMap)
		}, func() {
			// Another control plane stores the same configuration while
			// this store is refused: this store changed nothing.
			if !wrote.Swap(true) {
				if err := write(want); err != nil {
					t.Errorf("the other writer: %v", err)
				}
			}
		})
		stored, err := storeConfiguration(cfg, client, nil)
		wantErr(t, err)
		if stored {
			t.Error("a store refused at the ConfigMap says it stored (another writer stored the same configuration)")
		}
		if err != nil && strings.Contains(err.Error(), storedButFailed) {
			t.Errorf("the error of a store refused at the ConfigMap says it was updated: %v", err)
		}
	})

	t.Run("the update's answer lost, refused at the Role", func(t *testing.T) {
		// The API server takes kubeadm's first update of the ConfigMap,
		// and its answer is lost (502 Bad Gateway): kubeadm retries, finds
		// the ConfigMap as it wrote it and updates nothing more.
		set(t, old)
		var lost atomic.Bool
		client := proxiedClient(t, rc, func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
			switch {
			case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/configmaps/"+kubeadmconstants.KubeadmConfigConfigMap) && !lost.Swap(true):
				forward.ServeHTTP(httptest.NewRecorder(), r)
				http.Error(w, "the answer was lost", http.StatusBadGateway)
			case r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/roles"):
				refuse(w)
			default:
				forward.ServeHTTP(w, r)
			}
		})
		stored, err := storeConfiguration(cfg, client, nil)
		wantErr(t, err)
		if !lost.Load() {
			t.Fatal("kubeadm's store did not update the ConfigMap")
		}
		if got := get(t); got != want {
			t.Fatalf("kubeadm-config after the store:\n%s\nwant\n%s", got, want)
		}
		if !stored || err == nil || !strings.Contains(err.Error(), storedButFailed+", but: ") {
			t.Errorf("a store whose update's answer was lost says stored %v, %v; want stored, in the error too", stored, err)
		}
	})

	t.Run("nothing to change", func(t *testing.T) {
		set(t, old)
		stored, err := storeConfiguration(cfg, admin, nil)
		if err != nil || !stored {
			t.Fatalf("storeConfiguration changing kubeadm-config: stored %v, %v; want stored", stored, err)
		}
		if got := get(t); got != want {
			t.Fatalf("kubeadm-config after the store:\n%s\nwant (what kubeadm wrote)\n%s", got, want)
		}
		stored, err = storeConfiguration(cfg, admin, nil)
		if err != nil || stored {
			t.Errorf("storeConfiguration into a kubeadm-config that carries the configuration: stored %v, %v; want not stored", stored, err)
		}
	})

	t.Run("no ConfigMap", func(t *testing.T) {
		if err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Delete(ctx, kubeadmconstants.KubeadmConfigConfigMap, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		stored, err := storeConfiguration(cfg, admin, nil)
		if err != nil || !stored {
			t.Errorf("storeConfiguration creating kubeadm-config: stored %v, %v; want stored", stored, err)
		}
		if got := get(t); got != want {
			t.Fatalf("kubeadm-config after the store:\n%s\nwant (what kubeadm wrote)\n%s", got, want)
		}
	})
}

// refusingClient is a client of rc's API server through a proxy that
// answers 403 Forbidden to the requests refuse matches, after calling
// before (nil: nothing) for each.
func refusingClient(t *testing.T, rc *rest.Config, refuses func(*http.Request) bool, before func()) kubernetes.Interface {
	t.Helper()
	return proxiedClient(t, rc, func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		if !refuses(r) {
			forward.ServeHTTP(w, r)
			return
		}
		if before != nil {
			before()
		}
		refuse(w)
	})
}

// refuse answers 403 Forbidden as the API server does.
func refuse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"refused by the test's proxy","reason":"Forbidden","code":403}`)
}

// proxiedClient is a client of rc's API server through a proxy that
// serves each request with serve, forward passing it on to the server.
func proxiedClient(t *testing.T, rc *rest.Config, serve func(w http.ResponseWriter, r *http.Request, forward http.Handler)) kubernetes.Interface {
	t.Helper()
	target, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = tr
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, rp)
	}))
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "proxy.conf")
	data := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster: {server: %q}\nusers:\n- name: proxy\n  user: {}\ncontexts:\n- name: envtest\n  context: {cluster: envtest, user: proxy}\ncurrent-context: envtest\n", srv.URL)
	if err := os.WriteFile(kc, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := Client(kc)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
