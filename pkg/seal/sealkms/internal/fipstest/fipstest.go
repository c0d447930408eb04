// Package fipstest reruns a test of the KMS recipient packages in FIPS
// 140-3 only mode (GODEBUG=fips140=only), to show that the type, its SDK
// and its test double work when FIPS mode is enforced.
package fipstest

import (
	"crypto/fips140"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const childEnv = "MACHINEADM_KMS_FIPS_CHILD"

// Rerun runs the test name of this test binary again in a child process
// with GODEBUG=fips140=only and fails t unless it passes there. In the
// child it skips.
func Rerun(t *testing.T, name string) {
	t.Helper()
	if os.Getenv(childEnv) != "" {
		t.Skip("in the FIPS child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1", "GODEBUG=fips140=only")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) || !strings.Contains(string(out), "fips140 enforced") {
		t.Fatalf("%s with GODEBUG=fips140=only: %v\n%s", name, err, out)
	}
}

// InChild, called first by the test Rerun names, fails t when it runs in
// the child and FIPS 140-3 mode is not enforced, and logs that it is.
func InChild(t *testing.T) {
	t.Helper()
	if os.Getenv(childEnv) == "" {
		return
	}
	if !fips140.Enforced() {
		t.Fatal("GODEBUG=fips140=only did not enforce FIPS 140-3 mode")
	}
	t.Log("fips140 enforced")
}
