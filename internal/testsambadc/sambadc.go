//go:build linux

// Package testsambadc provisions and serves a real samba Active Directory
// domain controller (Debian's samba: samba-tool and samba) for tests: the
// domain join test (pkg/host/domainjoin) in namespaces of its own and the
// e2e's Cluster API scenario inside the harness's network namespace. The
// DC runs in a UTS namespace of its own (`unshare --uts`) so that its host
// name never becomes the caller's. It is for tests only.
package testsambadc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Binaries are the programs Start runs; a test skips (or fails) when one is
// missing.
var Binaries = []string{"unshare", "samba", "samba-tool"}

// Options describe the domain and where its DC listens.
type Options struct {
	// Dir is the provision's target directory (created); everything the
	// DC writes stays in it.
	Dir string
	// Realm is the Kerberos realm, upper case, for example
	// "CORP.EXAMPLE.TEST"; the DNS domain is its lower case.
	Realm string
	// Domain is the NetBIOS domain name, for example "CORP".
	Domain string
	// HostName is the DC's host name, for example "dc1".
	HostName string
	// IP is the DC's IPv4 address; it must already be on Interface.
	IP string
	// Interface is what samba binds to, its "interfaces" option with "bind
	// interfaces only": a link name (every address on it) or one address.
	Interface string
	// AdminPassword is the Administrator's password. It is on
	// samba-tool's command line during the provision (samba-tool reads
	// it nowhere else), so it must be a test-only value.
	AdminPassword string
	// Wait bounds how long Start waits for LDAP (389) and Kerberos (88).
	// Default 90 seconds.
	Wait time.Duration
}

// DC is a running samba AD DC.
type DC struct {
	opts Options
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	// Provisioned and Serving are how long the provision took and how
	// long after Start's beginning LDAP and Kerberos answered.
	Provisioned, Serving time.Duration
}

type lockedWriter struct{ d *DC }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	return w.d.log.Write(p)
}

// inUTS runs argv in a new UTS namespace whose host name is name.
func inUTS(ctx context.Context, name string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "unshare", append([]string{"--uts", "sh", "-c", `hostname "$0" && exec "$@"`, name}, argv...)...)
}

// Start provisions the domain in o.Dir and starts samba, returning once it
// answers on LDAP and Kerberos. On an error nothing is left running.
func Start(ctx context.Context, o Options) (*DC, error) {
	if o.Wait == 0 {
		o.Wait = 90 * time.Second
	}
	start := time.Now()
	prov := inUTS(ctx, o.HostName,
		"samba-tool", "domain", "provision", "--targetdir", o.Dir, "--realm", o.Realm, "--domain", o.Domain,
		"--server-role=dc", "--dns-backend=SAMBA_INTERNAL", "--adminpass", o.AdminPassword, "--host-name="+o.HostName,
		"--host-ip="+o.IP, "--option=interfaces="+o.Interface, "--option=bind interfaces only=yes",
		"--option=dns forwarder=127.0.0.1")
	if out, err := prov.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("samba-tool domain provision: %w\n%s", err, strings.ReplaceAll(string(out), o.AdminPassword, "<password>"))
	}
	d := &DC{opts: o, Provisioned: time.Since(start)}
	// Not bound to ctx: the DC outlives the call; Stop ends it.
	d.cmd = inUTS(context.Background(), o.HostName, "samba", "-s", filepath.Join(o.Dir, "etc/smb.conf"), "-i")
	d.cmd.Stdout, d.cmd.Stderr = lockedWriter{d}, lockedWriter{d}
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.Wait)
	for _, port := range []string{"389", "88"} {
		for {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(o.IP, port), time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				d.Stop()
				return nil, fmt.Errorf("samba did not serve port %s on %s within %s:\n%s", port, o.IP, o.Wait, d.Log())
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	d.Serving = time.Since(start)
	return d, nil
}

// Log is what samba printed so far.
func (d *DC) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// Stop ends samba (its whole process group) and waits for it.
func (d *DC) Stop() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	d.cmd = nil
}

// Computers lists the domain's computer accounts' sAMAccountNames (for
// example "NODE1$"), read from the DC's own database with samba-tool.
func (d *DC) Computers(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, "samba-tool", "computer", "list",
		"-H", filepath.Join(d.opts.Dir, "private/sam.ldb"), "-s", filepath.Join(d.opts.Dir, "etc/smb.conf")).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("samba-tool computer list: %w: %s", err, out)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			names = append(names, l)
		}
	}
	if len(names) == 0 {
		return nil, errors.New("samba-tool computer list: no computer accounts (the DC's own should be there)")
	}
	return names, nil
}
