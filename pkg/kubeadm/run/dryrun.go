package run

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
)

// A dry run of a kubeadm phase writes into one flat directory (kubeadm's
// KUBEADM_*_DRYRUN_DIR) and prints every API object it would create,
// whole. For a person, dryRunPlan turns that into a few lines: the host
// files the real run would write (mapped back to where kubeadm writes them
// on a host), the API objects it would create, patch or delete, by kind and
// name, and kubeadm's own "Would ..." statements. Object contents are never
// part of the plan (a Secret's data stays out of it).

// dirSnapshot maps a file below a directory, by slash-separated relative
// name, to the SHA-256 of its content.
type dirSnapshot map[string][32]byte

// snapshot reads every regular file below dir; a missing dir is empty.
func snapshot(dir string) dirSnapshot {
	s := dirSnapshot{}
	if dir == "" {
		return s
	}
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		s[filepath.ToSlash(rel)] = sha256.Sum256(data)
		return nil
	})
	return s
}

// changed returns the files of after that are new or differ from before,
// sorted.
func (after dirSnapshot) changed(before dirSnapshot) []string {
	var out []string
	for name, sum := range after {
		if old, ok := before[name]; !ok || old != sum {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// isCertMaterial says whether a file kubeadm wrote to its dry-run
// directory belongs in the certificates directory: certificates, keys and
// the service-account key pair, and everything below etcd/.
func isCertMaterial(name string) bool {
	if strings.HasPrefix(name, "etcd/") {
		return true
	}
	ext := filepath.Ext(name)
	return !strings.Contains(name, "/") && (ext == ".crt" || ext == ".key" || ext == ".pub")
}

// kubeletFiles are the files kubeadm writes into the kubelet's directory
// (kubeadm constants: KubeletConfigurationFileName, KubeletEnvFileName,
// KubeletInstanceConfigurationFileName).
var kubeletFiles = []string{
	kubeadmconstants.KubeletConfigurationFileName,
	kubeadmconstants.KubeletEnvFileName,
	kubeadmconstants.KubeletInstanceConfigurationFileName,
}

// hostPath is where a real run writes the file that a dry run wrote as
// name in its directory: certificates below certsDir, kubeconfig files in
// /etc/kubernetes, static pod manifests in /etc/kubernetes/manifests, the
// kubelet's files in /var/lib/kubelet; "" for anything else.
func hostPath(name, certsDir string) string {
	switch {
	case isCertMaterial(name):
		return filepath.Join(certsDir, filepath.FromSlash(name))
	case strings.Contains(name, "/"):
		return ""
	case filepath.Ext(name) == ".conf":
		return filepath.Join(kubeadmconstants.KubernetesDir, name)
	case slices.Contains(kubeletFiles, name):
		return filepath.Join(kubeadmconstants.KubeletRunDirectory, name)
	case strings.HasSuffix(name, ".yaml"):
		// etcd.yaml, kube-apiserver.yaml, kube-controller-manager.yaml,
		// kube-scheduler.yaml: the static pod manifests.
		return filepath.Join(kubeadmconstants.GetStaticPodDirectory(), name)
	}
	return ""
}

// syncCertificates copies the certificate material kubeadm wrote to its
// dry-run directory (files) into certsDir, where the dry run's manifests
// and kubeconfig files point, so that the paths they name exist. A file
// already in certsDir is kept: kubeadm copies the CAs it finds there into
// its directory, and a real run uses the existing file. It returns the
// names it copied: the files a real run would create.
func syncCertificates(dryRunDir, certsDir string, files []string) ([]string, error) {
	var copied []string
	for _, name := range files {
		if !isCertMaterial(name) {
			continue
		}
		dst := filepath.Join(certsDir, filepath.FromSlash(name))
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dryRunDir, filepath.FromSlash(name)))
		if err != nil {
			return copied, err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return copied, err
		}
		mode := fs.FileMode(0o644)
		if filepath.Ext(name) == ".key" {
			mode = 0o600
		}
		if err := os.WriteFile(dst, data, mode); err != nil {
			return copied, err
		}
		copied = append(copied, name)
	}
	return copied, nil
}

var (
	// kubeadm's fake client (util/apiclient/dryrun.go) announces each
	// request, then either the object's name or the whole object.
	dryRunAction   = regexp.MustCompile(`^\[dryrun\] Would perform action (\w+) on resource "([^"]+)"`)
	dryRunResource = regexp.MustCompile(`^\[dryrun\] Resource name "([^"]*)", namespace "([^"]*)"`)
	// kubeadm's own dry-run statements: "[etcd] Would ensure that ...".
	dryRunWould = regexp.MustCompile(`^\[[\w-]+\] (Would .*)$`)
	// A preflight warning: "\t[WARNING Hostname]: hostname ...".
	preflightWarning = regexp.MustCompile(`^\s*\[WARNING ([^\]]+)\]: (.*)$`)
)

// mutating are the API verbs that change the cluster.
var mutating = []string{"CREATE", "UPDATE", "PATCH", "DELETE"}

// apiPlan reads kubeadm's dry-run output and returns one line per API
// request that would change the cluster ("would create ConfigMap
// kube-system/kubeadm-config"), and kubeadm's own "Would ..." statements,
// in order, without repeats. Object bodies are skipped: only the kind and
// the metadata name and namespace of an attached object are read.
func apiPlan(lines []string) []string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	verb, resource := "", ""
	inObject, inMeta := false, false
	kind, name, ns := "", "", ""
	flush := func() {
		if verb != "" && (name != "" || kind != "") {
			what := resource
			if kind != "" {
				what = kind
			}
			add(fmt.Sprintf("would %s %s %s", strings.ToLower(verb), what, qualified(ns, name)))
		}
		verb, resource, kind, name, ns = "", "", "", "", ""
		inObject, inMeta = false, false
	}
	for _, l := range lines {
		if m := dryRunAction.FindStringSubmatch(l); m != nil {
			flush()
			if slices.Contains(mutating, m[1]) {
				verb, resource = m[1], m[2]
			}
			continue
		}
		if verb == "" {
			if m := dryRunWould.FindStringSubmatch(l); m != nil && !strings.HasPrefix(l, "[dryrun] Would write file") {
				add(lowerFirst(m[1]))
			}
			continue
		}
		switch {
		case dryRunResource.MatchString(l):
			m := dryRunResource.FindStringSubmatch(l)
			name, ns = m[1], m[2]
		case l == "[dryrun] Attached object:":
			inObject = true
		case inObject && strings.HasPrefix(l, "kind: "):
			kind, inMeta = strings.TrimSpace(strings.TrimPrefix(l, "kind: ")), false
		case inObject && l == "metadata:":
			inMeta = true
		case inObject && inMeta && strings.HasPrefix(l, "  name: "):
			name = strings.Trim(strings.TrimSpace(strings.TrimPrefix(l, "  name: ")), `"'`)
		case inObject && inMeta && strings.HasPrefix(l, "  namespace: "):
			ns = strings.Trim(strings.TrimSpace(strings.TrimPrefix(l, "  namespace: ")), `"'`)
		case inObject && l != "" && l[0] != ' ' && l[0] != '-':
			// Another top-level key (data:, spec:) or kubeadm's next line.
			inMeta = false
			if strings.HasPrefix(l, "[") {
				flush()
				if m := dryRunWould.FindStringSubmatch(l); m != nil && !strings.HasPrefix(l, "[dryrun] Would write file") {
					add(lowerFirst(m[1]))
				}
			}
		}
	}
	flush()
	return out
}

// qualified is "namespace/name", or name for a cluster-scoped object.
func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// PreflightWarnings returns kubeadm's preflight warnings in output lines,
// as "Name: message".
func PreflightWarnings(lines []string) []string {
	var out []string
	for _, l := range lines {
		if m := preflightWarning.FindStringSubmatch(l); m != nil {
			out = append(out, m[1]+": "+m[2])
		}
	}
	return out
}

// joinDoneStart and joinDoneEnd bound kubeadm join's closing message
// ("This node has joined the cluster: ... Run 'kubectl get nodes' ...",
// printed by cmd/join.go after the phases ran), which kubeadm prints after
// every phase that machineadm runs as a whole `kubeadm join` with the
// others skipped, and in a dry run too, where nothing joined.
const (
	joinDoneStart = "This node has joined the cluster"
	joinDoneEnd   = "Run 'kubectl get nodes'"
)

// joinDoneFilter returns a line filter that drops kubeadm join's closing
// message: keep(line) is false from its first line through its last.
func joinDoneFilter() func(line string) bool {
	in := false
	return func(line string) bool {
		switch {
		case strings.HasPrefix(line, joinDoneStart):
			in = true
			return false
		case in && strings.HasPrefix(line, joinDoneEnd):
			in = false
			return false
		}
		return !in
	}
}

// filePlan is the plan lines for the dry-run files a phase wrote: a
// "would write" line for each host path. With synced (the certificates
// were copied to the run's certificates directory) a certificate is listed
// only when it was copied, new to that directory.
func filePlan(changed, copied []string, certsDir string, synced bool) []string {
	var out []string
	for _, name := range changed {
		if synced && isCertMaterial(name) && !slices.Contains(copied, name) {
			continue
		}
		if p := hostPath(name, certsDir); p != "" {
			out = append(out, "would write "+p)
		}
	}
	return out
}
