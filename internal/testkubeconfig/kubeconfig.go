// Package testkubeconfig writes the kubeconfig that unit tests give the
// code under test to reach a loopback TLS server: one cluster, one user
// with a bearer token, one context, built with client-go's clientcmd.
package testkubeconfig

import (
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Token returns a kubeconfig (YAML) whose current context reaches server
// (an https URL) trusting the PEM certificate authority caPEM, with the
// bearer token "test". It panics only if clientcmd cannot serialise the
// config, which a valid one never fails.
func Token(server string, caPEM []byte) []byte {
	c := clientcmdapi.NewConfig()
	c.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "test"}
	c.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	c.CurrentContext = "x"
	out, err := clientcmd.Write(*c)
	if err != nil {
		panic(err)
	}
	return out
}
