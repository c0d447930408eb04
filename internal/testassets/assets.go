// Package testassets finds the kube-apiserver and etcd binaries that the
// integration tests run against (envtest): the e2e builds them into its
// cache, and KUBEBUILDER_ASSETS may name another directory.
package testassets

import (
	"os"
	"path/filepath"
)

// CacheDir is the e2e cache: $MACHINEADM_E2E_CACHE, default
// /var/cache/machineadm-e2e.
func CacheDir() string {
	if d := os.Getenv("MACHINEADM_E2E_CACHE"); d != "" {
		return d
	}
	return "/var/cache/machineadm-e2e"
}

// Dir is the first of $KUBEBUILDER_ASSETS and CacheDir()/bin that holds
// executable kube-apiserver and etcd files, or "" when neither does.
func Dir() string {
	for _, d := range []string{os.Getenv("KUBEBUILDER_ASSETS"), filepath.Join(CacheDir(), "bin")} {
		if d == "" {
			continue
		}
		if executable(filepath.Join(d, "kube-apiserver")) && executable(filepath.Join(d, "etcd")) {
			return d
		}
	}
	return ""
}

// executable says whether p is a regular file with an execute bit.
func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
