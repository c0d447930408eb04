package main

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"

	api "github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/containerd"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/domainjoin"
	"github.com/machineadm/machineadm/pkg/host/kmod"
	"github.com/machineadm/machineadm/pkg/host/staticpod"
	"github.com/machineadm/machineadm/pkg/host/sysctl"
	"github.com/machineadm/machineadm/pkg/host/windows"
	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/render"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
	"github.com/machineadm/machineadm/pkg/session"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// osContract is the OS maintainers' contract whose Files table must name
// every path machineadm writes on a host.
const osContract = "../../docs/os-contract.md"

// contractPaths are the paths named in the first column of the Files
// table of docs/os-contract.md, normalised by contractKey: each
// back-quoted absolute path (/… or C:\…), and each back-quoted file name
// without a directory, which is in the directory of the cell's previous
// absolute path ("`/etc/machineadm/agent.sha256`, `agent.sig`"). A path
// ending in "…" or "/" stands for everything below it; one with "*" is a
// pattern (path.Match).
func contractPaths(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(osContract)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n## Files\n")
	if !ok {
		t.Fatalf("%s has no Files section", osContract)
	}
	tick := regexp.MustCompile("`([^`]+)`")
	var out []string
	rows := 0
	for _, line := range strings.Split(rest, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| path ") || strings.HasPrefix(line, "|---") {
			continue
		}
		rows++
		cell := strings.SplitN(line, " | ", 2)[0]
		dir := ""
		for _, m := range tick.FindAllStringSubmatch(cell, -1) {
			p := m[1]
			switch {
			case strings.HasPrefix(p, "/"), strings.HasPrefix(p, `C:\`):
				p = contractKey(p)
				dir = path.Dir(strings.TrimSuffix(p, "…"))
			case dir != "" && !strings.ContainsAny(p, " /:{") && strings.Contains(p, "."):
				p = dir + "/" + p
			default:
				continue // a field path or flag, not a file
			}
			out = append(out, p)
		}
	}
	if rows < 10 || len(out) < 20 {
		t.Fatalf("%s: the Files table has %d rows and %d paths; is it still a table?", osContract, rows, len(out))
	}
	return out
}

// contractKey normalises a path for comparison: Windows separators as
// "/", Windows paths in lower case (the file system ignores case).
func contractKey(p string) string {
	if strings.HasPrefix(p, `C:\`) || strings.HasPrefix(p, "C:/") {
		return strings.ToLower(strings.ReplaceAll(p, `\`, "/"))
	}
	return p
}

// inContract says whether p (a machine path) is named by the table.
func inContract(table []string, p string) bool {
	p = contractKey(p)
	for _, e := range table {
		switch {
		case e == p:
			return true
		case strings.HasSuffix(e, "…") && strings.HasPrefix(p, strings.TrimSuffix(e, "…")):
			return true
		case strings.HasSuffix(e, "/") && strings.HasPrefix(p, e):
			return true
		case strings.Contains(e, "*"):
			if ok, _ := path.Match(e, p); ok {
				return true
			}
		}
	}
	return false
}

// writtenByConstant are the host paths machineadm (or the stub its
// renderers write) writes, from the constants of the code that writes
// them; the dry runs below add what kubeadm and the host steps plan.
func writtenByConstant() []string {
	ps := []string{
		// the run's own files (pkg/report, pkg/session, pkg/phases)
		report.DefaultPath, report.PreviousPath(report.DefaultPath), report.DefaultSentinel,
		path.Join(translate.DefaultWorkDir, session.LockFileName), path.Join(translate.DefaultWorkDir, session.LogFileName),
		// day 2 (pkg/upgrade, pkg/kubeadm/day2): the applied-spec record,
		// the upgrade's journal, a control-plane backup
		path.Join(translate.DefaultWorkDir, upgrade.RecordFile), path.Join(translate.DefaultWorkDir, upgrade.JournalFile),
		day2.BackupDir(kubeadmconstants.KubernetesDir, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) + "/kube-apiserver.yaml",
		// host preparation
		sysctl.ConfPath, kmod.ConfPath, containerd.ProxyDropIn, containerd.ConfigPath + "/registry.example/hosts.toml",
		staticpod.DefaultDir + "/custom.yaml",
		// domain join on Linux
		api.DefaultKeytab, domainjoin.Krb5ConfPath, domainjoin.SSSDConfPath,
		// the control plane as systemd units and their accounts
		cpunits.SysusersPath,
		// the stubs `machineadm render` writes
		render.LinuxAgentPath, render.IgnitionAgentPath, render.LinuxSpecPath, render.CloudConfigStubPath,
		render.WindowsAgentPath, render.WindowsSpecPath, render.WindowsReportPath, render.CloudbaseInitStubPath,
		// Windows: kubeadm's kubelet files and containerd's configuration
		windows.KubeadmFlagsFile, windows.KubeletConfigFile, windows.BootstrapKubeconfig, windows.Kubeconfig,
		windows.KubeletCertDir + `\kubelet-client-current.pem`, windows.RegistryConfigPath + `\registry.example\hosts.toml`,
		`C:\Program Files\containerd\config.toml`,
		// read, never written, but the contract must name them
		seal.DefaultIdentityFile, sealspec.SealedFileDir + "/token",
	}
	for _, name := range []string{kubeadmconstants.Etcd, kubeadmconstants.KubeAPIServer, kubeadmconstants.KubeControllerManager, kubeadmconstants.KubeScheduler} {
		c := cpunits.Component{Name: name}
		ps = append(ps, c.UnitPath(), c.EnvPath(), path.Join(cpunits.UnitDir, cpunits.WantedBy+".wants", c.Unit()))
	}
	return ps
}

// wouldWrite finds the host paths of a dry run's plan lines ("would write
// /etc/kubernetes/admin.conf", "would remove …").
var wouldWrite = regexp.MustCompile(`(?m)would (?:write|rewrite|append to|remove|create directory) (/[^\s,)]+)`)

// TestOSContractNamesEveryWrittenPath: every path machineadm writes on a
// host — the constants of the code that writes them, what dry runs of
// the control-plane-init and worker examples plan (kubeadm's files and
// every host step's), and the files a run keeps in its work directory
// (report, log, state, lock) — is named in docs/os-contract.md's Files
// table. The files the spec itself names (spec.host.files) are the
// user's.
func TestOSContractNamesEveryWrittenPath(t *testing.T) {
	table := contractPaths(t)
	written := map[string]string{} // path -> where it came from
	for _, p := range writtenByConstant() {
		written[p] = "a constant"
	}
	if os.Geteuid() == 0 {
		tmp := t.TempDir()
		pkiDir := filepath.Join(tmp, "pki")
		if out, code := machineadm(t, "pki", "init", "--out", pkiDir); code != 0 {
			t.Fatalf("pki init exit %d:\n%s", code, out)
		}
		for _, ex := range []string{"control-plane-init", "worker"} {
			pki := ""
			if ex == "control-plane-init" {
				pki = pkiDir
			}
			specPath := withInputs(t, ex, pki)
			dr := filepath.Join(tmp, ex)
			out, code := machineadm(t, "bootstrap", "-f", specPath, "--dry-run", "--dry-run-dir", dr)
			if code != 0 {
				t.Fatalf("%s: bootstrap --dry-run exit %d:\n%s", ex, code, out)
			}
			spec, err := os.ReadFile(specPath)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, m := range wouldWrite.FindAllStringSubmatch(out, -1) {
				// spec.host.files: the spec names them.
				if !strings.Contains(string(spec), "path: "+m[1]+"\n") {
					written[m[1]], n = "the dry run of "+ex, n+1
				}
			}
			// The run's own files, kept in the dry run's directory: its
			// report and log below var/lib/machineadm as on the host, the
			// work directory's kubeadm configuration and patches at its
			// top. kubeadm's own files (kubeadm/, pki/, systemd/) are
			// staged there and named by the plan's lines above.
			err = filepath.WalkDir(dr, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel := strings.TrimPrefix(p, dr+"/")
				switch first, _, _ := strings.Cut(rel, "/"); first {
				case "kubeadm", "pki", "systemd", ".machineadm-dry-run":
				case "var":
					written["/"+rel], n = "the dry run of "+ex+": "+rel, n+1
				default:
					written[path.Join(translate.DefaultWorkDir, rel)], n = "the dry run of "+ex+": "+rel, n+1
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n < 5 {
				t.Errorf("%s: only %d written paths found in the dry run:\n%s", ex, n, out)
			}
			t.Logf("%s: %d paths from the dry run", ex, n)
		}
	} else {
		t.Log("not root: the dry runs (unshare --net) are left out; only the constants are checked")
	}
	var missing []string
	for p, from := range written {
		if !inContract(table, p) {
			missing = append(missing, p+" ("+from+")")
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%s's Files table does not name these paths machineadm writes:\n  %s", osContract, strings.Join(missing, "\n  "))
	}
}

// TestContractPaths checks the table reader on rows of the table's form.
func TestContractPaths(t *testing.T) {
	table := []string{"/var/lib/machineadm/kubeadm-init.yaml", "/var/lib/machineadm/kubeadm-join.yaml", "/etc/kubernetes/…", "/etc/machineadm/units/*.env", "c:/programdata/machineadm/report.json"}
	for p, want := range map[string]bool{
		"/var/lib/machineadm/kubeadm-join.yaml":  true,
		"/etc/kubernetes/pki/ca.crt":             true,
		"/etc/kubernetes":                        false,
		"/etc/machineadm/units/etcd.env":         true,
		"/etc/machineadm/units/etcd.conf":        false,
		`C:\ProgramData\machineadm\report.json`:  true,
		`C:\ProgramData\machineadm\report2.json`: false,
		"/var/lib/machineadm/other":              false,
	} {
		if got := inContract(table, p); got != want {
			t.Errorf("inContract(%s) = %v, want %v", p, got, want)
		}
	}
}
