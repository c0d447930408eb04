package testkubeconfig

import (
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TestTokenLoads: client-go reads the kubeconfig back with the server,
// the certificate authority and the token.
func TestTokenLoads(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n")
	cfg, err := clientcmd.RESTConfigFromKubeConfig(Token("https://127.0.0.1:6443", ca))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || string(cfg.CAData) != string(ca) || cfg.BearerToken != "test" {
		t.Errorf("read back host %q, CA %q, token %q", cfg.Host, cfg.CAData, cfg.BearerToken)
	}
}
