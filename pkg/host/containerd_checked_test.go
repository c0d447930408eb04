//go:build !windows

package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/containerd"
)

// countingContainerd counts the two commands the containerd check runs
// (`containerd --version`, `containerd config dump`), standing in for
// them in env, with a file at /usr/bin/containerd under the root as the
// installed binary.
type countingContainerd struct {
	versions, verifies int
	refuse             bool
}

func (c *countingContainerd) env(h *testHost) *Env {
	env := h.env(nil)
	env.ContainerdVersion = func(context.Context, string) (string, error) {
		c.versions++
		return "containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7\n", nil
	}
	env.ContainerdVerify = func(_ context.Context, _ string, config []byte) error {
		c.verifies++
		if c.refuse {
			return &containerd.ConfigError{Binary: "/usr/bin/containerd", Msg: "refused"}
		}
		return nil
	}
	return env
}

func installContainerd(t *testing.T, root, content string) {
	t.Helper()
	p := filepath.Join(root, "usr/bin/containerd")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	// Replaced as a package upgrade does: a new file renamed over the old.
	if err := os.WriteFile(p+".new", []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
}

// TestContainerdCheckNotRepeated: containerd's loader checks a
// config.toml once per binary: a later run with the same rendered bytes
// and the same binary runs neither `containerd --version` nor `config
// dump`; a changed config, or a replaced binary, is checked again. A dry
// run or a check alone records nothing, and a refusal is never
// remembered as accepted.
func TestContainerdCheckNotRepeated(t *testing.T) {
	h := newTestHost(t)
	installContainerd(t, h.root, "containerd v1")
	cfg := h.fullSpec(t, nil)
	c := &countingContainerd{}
	record := filepath.Join(h.root, containerdCheckedPath)

	// A check alone and a dry run record nothing.
	if err := Check(context.Background(), c.env(h), Steps(cfg)); err != nil {
		t.Fatal(err)
	}
	dry := c.env(h)
	dry.DryRun = true
	runAll(t, cfg, dry)
	if _, err := os.Stat(record); err == nil {
		t.Fatal("a check or a dry run recorded the containerd check")
	}
	if c.versions != 2 || c.verifies != 2 {
		t.Fatalf("check and dry run: %d version, %d verify calls; want 2 and 2", c.versions, c.verifies)
	}

	*c = countingContainerd{}
	runAll(t, cfg, c.env(h))
	if c.versions != 1 || c.verifies != 1 {
		t.Fatalf("first run: %d version, %d verify calls; want 1 and 1", c.versions, c.verifies)
	}
	var rec checkedRecord
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.Binary != "/usr/bin/containerd" || !strings.HasPrefix(rec.Verified, "sha256:") || !strings.Contains(rec.Version, "v2.1.4") {
		t.Fatalf("record %s: %+v %v", b, rec, err)
	}
	if fi, _ := os.Stat(record); fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v", fi.Mode().Perm())
	}
	config, _ := os.ReadFile(filepath.Join(h.root, "etc/containerd/config.toml"))
	if rec.Verified != configDigest(config) {
		t.Errorf("recorded digest %s is not config.toml's", rec.Verified)
	}

	// Same binary, same bytes: nothing runs.
	*c = countingContainerd{}
	runAll(t, cfg, c.env(h))
	if c.versions != 0 || c.verifies != 0 {
		t.Errorf("unchanged rerun: %d version, %d verify calls; want none", c.versions, c.verifies)
	}

	// Another config.toml: checked (the version is still known).
	changed := h.fullSpec(t, func(d string) string {
		return strings.Replace(d, "registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.11", 1)
	})
	*c = countingContainerd{}
	runAll(t, changed, c.env(h))
	if c.versions != 0 || c.verifies != 1 {
		t.Errorf("changed config: %d version, %d verify calls; want 0 and 1", c.versions, c.verifies)
	}

	// Another binary (an upgrade): both asked again.
	installContainerd(t, h.root, "containerd v2, a longer binary")
	*c = countingContainerd{}
	runAll(t, changed, c.env(h))
	if c.versions != 1 || c.verifies != 1 {
		t.Errorf("replaced binary: %d version, %d verify calls; want 1 and 1", c.versions, c.verifies)
	}

	// A refused config is refused every time, the record untouched.
	before, _ := os.ReadFile(record)
	for range 2 {
		*c = countingContainerd{refuse: true}
		err := Check(context.Background(), c.env(h), Steps(cfg))
		if err == nil || c.verifies != 1 {
			t.Fatalf("refused config: err %v after %d verify calls", err, c.verifies)
		}
	}
	if after, _ := os.ReadFile(record); string(after) != string(before) {
		t.Errorf("a refusal changed the record:\n%s\n%s", before, after)
	}
}

// An offline root (an image being built) gets no record.
func TestContainerdCheckOfflineRecordsNothing(t *testing.T) {
	h := newTestHost(t)
	installContainerd(t, h.root, "containerd v1")
	c := &countingContainerd{}
	env := c.env(h)
	env.Offline, env.Services = true, nil
	runAll(t, h.fullSpec(t, nil), env)
	if c.verifies != 1 {
		t.Errorf("%d verify calls, want 1", c.verifies)
	}
	if _, err := os.Stat(filepath.Join(h.root, containerdCheckedPath)); err == nil {
		t.Error("an offline run recorded the containerd check")
	}
}
