//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/machineadm/machineadm/internal/testsambadc"
)

// The e2e's Active Directory: Debian's samba provisioned as an AD domain
// controller (internal/testsambadc, as the domain join test runs it) on an
// address of its own on the harness bridge, inside the harness's network
// namespace, so the machines reach it and nothing else does. TestClusterAPI's
// machine capiADJoin joins it with adcli before it joins the cluster.
const (
	adDCIP    = "10.213.0.250"
	adRealm   = "AD.E2E.TEST"
	adDomain  = "ad.e2e.test"
	adNetBIOS = "ADE2E"
	adDCName  = "dc1"
	// adImage is the NspawnMachine spec.image of a machine made from the
	// OS image with adcli (hack/e2e/adcli.sh's overlay) whose name
	// server is the DC.
	adImage = "adjoin"
)

// adcliRoot is the cached adcli overlay (hack/e2e/adcli.sh).
func (e *env) adcliRoot() string { return filepath.Join(e.cache, "adcli/root") }

// startADDC puts the DC's address on the harness bridge and provisions and
// starts the DC; it returns the DC and its Administrator password (new in
// every run; on samba-tool's command line in the harness namespace only,
// during the provision). The caller stops the DC.
func (e *env) startADDC(ctx context.Context) (*testsambadc.DC, string, error) {
	for _, bin := range testsambadc.Binaries {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, "", fmt.Errorf("%s not installed (hack/install-deps.sh installs samba)", bin)
		}
	}
	if out, err := exec.CommandContext(ctx, "ip", "addr", "replace", adDCIP+"/24", "dev", bridgeName).CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("ip addr replace %s: %w: %s", adDCIP, err, out)
	}
	dir := filepath.Join(e.runDir, "ad-dc")
	if err := os.RemoveAll(dir); err != nil {
		return nil, "", err
	}
	// The fixed prefix meets AD's complexity rule.
	password := "Adm1n-" + rand.Text()
	dc, err := testsambadc.Start(ctx, testsambadc.Options{
		Dir: dir, Realm: adRealm, Domain: adNetBIOS, HostName: adDCName, IP: adDCIP, Interface: adDCIP,
		AdminPassword: password,
	})
	return dc, password, err
}

// layADImage makes m the OS image of a site on the domain: adcli and its
// libraries (the cached overlay) and the DC as name server.
func (e *env) layADImage(ctx context.Context, m *Machine) error {
	if _, err := os.Stat(filepath.Join(e.adcliRoot(), "usr/sbin/adcli")); err != nil {
		return fmt.Errorf("adcli overlay missing (make e2e-prepare, hack/e2e/adcli.sh): %w", err)
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", e.adcliRoot()+"/.", m.Root+"/").CombinedOutput(); err != nil {
		return fmt.Errorf("copy adcli overlay: %w: %s", err, out)
	}
	return m.WriteFile("/etc/resolv.conf", []byte("# the AD domain's name server (its DC)\nnameserver "+adDCIP+"\n"), 0o644)
}
