package cmd

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

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

// TestEveryCommandUsageErrorsExit2 runs every command of the tree with the usage
// mistakes a script makes — an unknown flag, a flag without its value, a
// positional argument too many, and for a command that groups others an
// unknown subcommand — and wants exit 2 with "Error:" and the pointer to
// --help, never 0 or 1. Commands that only group others exited 0 with
// their help for an unknown subcommand.
func TestEveryCommandUsageErrorsExit2(t *testing.T) {
	root := NewRootCommand(strings.NewReader(""), io.Discard, io.Discard)
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			walk(sub, append(slices.Clip(path), sub.Name()))
		}
	}
	walk(root, nil)
	if len(paths) < 20 {
		t.Fatalf("walked only %d commands: %v", len(paths), paths)
	}
	for _, p := range paths {
		cmd, _, _ := root.Find(p)
		mistakes := map[string][]string{
			"unknown flag":       append(slices.Clip(p), "--no-such-flag"),
			"unknown short flag": append(slices.Clip(p), "-Z"),
			"too many arguments": append(slices.Clip(p), "a-1", "a-2", "a-3"),
			"log level no value": append(slices.Clip(p), "--log-level"),
		}
		if cmd.HasSubCommands() {
			mistakes["unknown subcommand"] = append(slices.Clip(p), "no-such-command")
		}
		for what, args := range mistakes {
			code, out, errOut := run(t, "", args...)
			if code != session.ExitBadInput || !strings.Contains(errOut, "Error: ") || !strings.Contains(errOut, "--help' for usage") {
				t.Errorf("machineadm %s (%s): exit %d, want %d\nstdout %.200s\nstderr %.300s", strings.Join(args, " "), what, code, session.ExitBadInput, out, errOut)
			}
		}
	}
	// A group without arguments still shows its help.
	if code, out, _ := run(t, "", "pki"); code != session.ExitOK || !strings.Contains(out, "Available Commands") {
		t.Errorf("machineadm pki: exit %d, stdout %.200s", code, out)
	}
}
