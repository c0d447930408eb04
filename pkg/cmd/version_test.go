package cmd

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/session"
	"github.com/machineadm/machineadm/pkg/version"
)

func TestVersionJSON(t *testing.T) {
	code, out, errOut := run(t, "", "version", "-o", "json")
	if code != session.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("version -o json is not JSON: %v\n%s", err, out)
	}
	want := version.Get()
	for k, v := range map[string]string{
		"machineadm": want.Machineadm, "gitCommit": want.GitCommit, "kubernetes": want.Kubernetes,
		"goVersion": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH,
	} {
		if got[k] != v || v == "" {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != 5 {
		t.Errorf("unexpected keys: %v", got)
	}
	// Tests run through `make test` are stamped like the binary.
	if err := version.CheckStamped(); err != nil {
		t.Logf("unstamped test binary (run with make test): %v", err)
	} else if !strings.HasPrefix(got["kubernetes"], "v1.") {
		t.Errorf("kubernetes = %q, want the embedded kubeadm's version", got["kubernetes"])
	}
}

func TestVersionText(t *testing.T) {
	code, out, _ := run(t, "", "version")
	v := version.Get()
	if code != session.ExitOK || !strings.HasPrefix(out, "machineadm "+v.Machineadm) || !strings.Contains(out, "kubernetes (embedded kubeadm) "+v.Kubernetes) {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

// TestHelpUnknownTopicIsUsageError: 'machineadm help TOPIC' shows a known
// command's help (exit 0) and refuses an unknown topic with exit 2, where
// cobra's own help command printed "Unknown help topic" and exited 0.
func TestHelpUnknownTopicIsUsageError(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"help", "render"}, {"help", "bootstrap", "phase"}} {
		var out, errOut bytes.Buffer
		if code := Execute(args, strings.NewReader(""), &out, &errOut); code != session.ExitOK || out.Len() == 0 {
			t.Errorf("%q: exit %d, %d bytes of help, stderr %s", args, code, out.Len(), errOut.String())
		}
	}
	for _, args := range [][]string{{"help", "bootstarp"}, {"help", "bootstrap", "bogus"}} {
		var out, errOut bytes.Buffer
		if code := Execute(args, strings.NewReader(""), &out, &errOut); code != session.ExitBadInput || !strings.Contains(errOut.String(), "unknown help topic") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2", args, code, out.String(), errOut.String())
		}
	}
}
