package cmd

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// initBudget is the most heap a machineadm package may allocate in its
// package initialisation (bytes). Every command pays for every linked
// package's init, `machineadm version` as much as `machineadm upgrade`,
// so tables, regular expressions and templates are built on first use
// (sync.OnceValue) instead; registrations into the registries stay.
const initBudget = 16 << 10

// TestPackageInitIsCheap runs this test binary (which links every
// package the machineadm binary does) with GODEBUG=inittrace=1, running
// no test, and checks that no machineadm package allocates more than
// initBudget at init (docs/design.md, "Memory"). It failed when the
// validation package compiled 28 regular expressions at init (303 KB),
// render parsed its stub templates (116 KB) and redact, quote, seal, spec
// and the kubeadm adapter compiled theirs.
func TestPackageInitIsCheap(t *testing.T) {
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	const prefix = "github.com/machineadm/machineadm/"
	seen := 0
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		// init PKG @T ms, D ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		if !strings.HasPrefix(f[1], prefix) {
			continue
		}
		seen++
		b, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		if b > initBudget {
			t.Errorf("%s allocates %d bytes at init (budget %d): build its tables, regular expressions and templates on first use", f[1], b, initBudget)
		}
	}
	if seen < 10 {
		t.Fatalf("the init trace listed only %d machineadm packages; the check would prove nothing:\n%s", seen, out)
	}
}
