package testassets

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDir: a directory counts only with both binaries executable, and
// KUBEBUILDER_ASSETS comes before the cache.
func TestDir(t *testing.T) {
	assets, cache := t.TempDir(), t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", assets)
	t.Setenv("MACHINEADM_E2E_CACHE", cache)
	if got := Dir(); got != "" {
		t.Fatalf("empty directories: Dir() = %q", got)
	}
	write := func(dir, name string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(cache, "bin")
	write(bin, "kube-apiserver", 0o755)
	write(bin, "etcd", 0o644)
	if got := Dir(); got != "" {
		t.Errorf("etcd not executable: Dir() = %q", got)
	}
	if err := os.Chmod(filepath.Join(bin, "etcd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Dir(); got != bin {
		t.Errorf("Dir() = %q, want the cache's %q", got, bin)
	}
	write(assets, "kube-apiserver", 0o755)
	write(assets, "etcd", 0o755)
	if got := Dir(); got != assets {
		t.Errorf("Dir() = %q, want KUBEBUILDER_ASSETS %q", got, assets)
	}
}
