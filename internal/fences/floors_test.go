package fences

import (
	"testing"
)

// The floors of docs/architecture.md, one test per rule. Each test reads
// the packages' direct imports (not the tests') with `go list`, for every
// OS the binary is built for where the imports differ by OS.

// groundFloor are the packages every floor may import: they import no
// machineadm package at all.
var groundFloor = []string{"pkg/errclass", "pkg/printable", "pkg/atomicfile", "pkg/readlimit", "pkg/version", "pkg/heapprof"}

// TestGroundFloorImportsNoMachineadmPackage: errclass, printable,
// atomicfile, readlimit, version and heapprof import no machineadm
// package, and the spec API (pkg/apis/...) imports only itself.
func TestGroundFloorImportsNoMachineadmPackage(t *testing.T) {
	var patterns []string
	for _, p := range groundFloor {
		patterns = append(patterns, module+"/"+p)
	}
	pkgs := list(t, "", append(patterns, module+"/pkg/apis/...")...)
	if len(pkgs) < len(groundFloor)+2 {
		t.Fatalf("go list found %d packages, want the ground floor and pkg/apis/...", len(pkgs))
	}
	for _, p := range pkgs {
		api := hasPrefixAny(p.ImportPath, module+"/pkg/apis")
		for _, imp := range p.Imports {
			if hasPrefixAny(imp, module) && !(api && hasPrefixAny(imp, module+"/pkg/apis")) {
				t.Errorf("%s imports %s: the ground floor imports no machineadm package (pkg/apis/... only itself)", p.ImportPath, imp)
			}
		}
	}
}

// TestOnlySessionImportsPhases: a run's workflow (pkg/phases) is built and
// run by pkg/session alone; the command tree reaches it through the
// session, and nothing below imports it.
func TestOnlySessionImportsPhases(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		for _, p := range list(t, goos, module+"/...") {
			if hasPrefixAny(p.ImportPath, module+"/pkg/session", module+"/pkg/phases") {
				continue
			}
			for _, imp := range p.Imports {
				if hasPrefixAny(imp, module+"/pkg/phases") {
					t.Errorf("%s (GOOS=%s) imports %s: only pkg/session runs the workflow", p.ImportPath, goos, imp)
				}
			}
		}
	}
}

// TestOnlyCmdImportsSession: a run is started by the command tree
// (pkg/cmd/...) alone; no lower floor, and not the controller, imports
// pkg/session.
func TestOnlyCmdImportsSession(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		for _, p := range list(t, goos, module+"/...") {
			if hasPrefixAny(p.ImportPath, module+"/pkg/cmd", module+"/pkg/session") {
				continue
			}
			for _, imp := range p.Imports {
				if hasPrefixAny(imp, module+"/pkg/session") {
					t.Errorf("%s (GOOS=%s) imports %s: only pkg/cmd/... starts a run", p.ImportPath, goos, imp)
				}
			}
		}
	}
}

// cmdException is one import the command tree is allowed across a fence,
// with the reason. goos "" is every OS.
type cmdException struct {
	importer, imported, goos, why string
	// mayBeUnused exempts the exception from the stale-entry check.
	mayBeUnused bool
}

// cmdImports runs rule over the direct imports of pkg/cmd/... on Linux and
// Windows: every import of a package under one of the forbidden prefixes
// is an error unless an exception names it (importer, imported and, when
// set, the OS). It fails when an exception is never used, so the list
// cannot keep a stale entry.
func cmdImports(t *testing.T, rule string, forbidden []string, exceptions []cmdException) {
	t.Helper()
	used := make([]bool, len(exceptions))
	for _, goos := range []string{"linux", "windows"} {
		pkgs := list(t, goos, module+"/pkg/cmd/...")
		if len(pkgs) < 2 {
			t.Fatalf("go list found %d packages under pkg/cmd, want pkg/cmd and its sub-packages", len(pkgs))
		}
		for _, p := range pkgs {
		imports:
			for _, imp := range p.Imports {
				if !hasPrefixAny(imp, forbidden...) {
					continue
				}
				for i, e := range exceptions {
					if p.ImportPath == module+"/"+e.importer && imp == module+"/"+e.imported && (e.goos == "" || e.goos == goos) {
						used[i] = true
						continue imports
					}
				}
				t.Errorf("%s (GOOS=%s) imports %s: %s", p.ImportPath, goos, imp, rule)
			}
		}
	}
	for i, u := range used {
		if !u && !exceptions[i].mayBeUnused {
			t.Errorf("exception %s -> %s is never used: remove it", exceptions[i].importer, exceptions[i].imported)
		}
	}
}

// TestCmdImportsNoPhasesPackage: the command tree (pkg/cmd/...) parses
// flags, calls pkg/session for a run and prints; it never builds or runs
// phases itself.
func TestCmdImportsNoPhasesPackage(t *testing.T) {
	cmdImports(t, "pkg/cmd/... imports no phases package; a run is pkg/session's",
		[]string{module + "/pkg/phases"}, nil)
}

// TestCmdImportsNoHostPackage: the command tree changes nothing on the
// host itself; host concerns run as phases of a session. The exceptions
// are named, none of them a run: the Windows kubelet service's program,
// and config validate's read-only checks.
func TestCmdImportsNoHostPackage(t *testing.T) {
	cmdImports(t, "pkg/cmd/... imports no host package; host concerns run as phases of a session",
		[]string{module + "/pkg/host"}, []cmdException{
			{importer: "pkg/cmd", imported: "pkg/host/windows", goos: "windows", why: "kubelet-service is the Windows kubelet service's program, not a run"},
			{importer: "pkg/cmd/configcmd", imported: "pkg/host", why: "config validate looks for a spec's files on this machine only when the spec is for its OS (host.OSMismatch)"},
			{importer: "pkg/cmd/configcmd", imported: "pkg/host/containerd", why: "config validate refuses a containerd configPatch containerd refuses, as host-check does; read-only"},
			{importer: "pkg/cmd/configcmd", imported: "pkg/host/files", why: "config validate warns about secret files group or others can read, with inputs-check's detector (files.Resolve, files.WideSecretFiles); reads modes only"},
		})
}

// TestCmdImportsKubeadmToolsNotItsRunner: of the kubeadm adapter the
// command tree uses only the PKI tools (pki, token, certificate-key) and,
// for `config validate` and `config kubeadm`, the translation; kubeadm
// itself (the runner, the systemd control plane, repair, discovery) runs
// as phases of a session (pkg/kubeadm/run, systemd, repair, discovery).
func TestCmdImportsKubeadmToolsNotItsRunner(t *testing.T) {
	exceptions := []cmdException{
		{importer: "pkg/cmd", imported: "pkg/kubeadm/pki", why: "pki init, pki hash, pki certificate-key and token generate"},
		{importer: "pkg/cmd", imported: "pkg/kubeadm/day2", why: "certs check-expiration prints kubeadm's own expiration table; it reads the certificates and changes nothing"},
		{importer: "pkg/cmd/configcmd", imported: "pkg/kubeadm/translate", why: "config validate and config kubeadm: the kubeadm documents and kubeadm's own validation of them"},
	}
	cmdImports(t, "pkg/cmd/... imports of the kubeadm adapter only its PKI tools and translation; kubeadm runs as phases of a session",
		[]string{module + "/pkg/kubeadm", "k8s.io/kubernetes"}, exceptions)
}
