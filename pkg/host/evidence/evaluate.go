package evidence

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/compliance"
)

// Verdict is the outcome of one check on this node.
type Verdict string

// The verdicts, as kube-bench names them (NotApplicable: the check
// concerns something this node does not have, such as an external etcd's
// data directory or a manifest of the Systemd runtime).
const (
	Pass          Verdict = "PASS"
	Fail          Verdict = "FAIL"
	Warn          Verdict = "WARN"
	NotApplicable Verdict = "NOT_APPLICABLE"
	// NotEvaluated is a dry run's verdict (Planned): the node does not
	// exist yet, so nothing was read.
	NotEvaluated Verdict = "NOT_EVALUATED"
)

// Result is one check's verdict on this node.
type Result struct {
	// Check is the catalogue's check.
	Check compliance.Check
	// Verdict is PASS, FAIL, WARN or NOT_APPLICABLE (NOT_EVALUATED in a
	// dry run's Planned). A manual check that does not hold is WARN, never
	// FAIL.
	Verdict Verdict
	// Detail says what was found ("/var/lib/kubelet/config.yaml has mode
	// 0644"), never a secret (modes, owners, flag values of the probed
	// flags only).
	Detail string
	// Waiver is the spec's reason for waiving the check; "" when not
	// waived. A waived FAIL does not fail the bootstrap.
	Waiver string
}

// Failed says the result fails the bootstrap: FAIL and not waived.
func (r Result) Failed() bool { return r.Verdict == Fail && r.Waiver == "" }

// Evaluate evaluates every check of profile p that concerns this node (the
// node scope on every node; master, etcd and controlplane on a control
// plane; never the cluster's policies, nor checks without a probe), in the
// catalogue's order. waivers maps a check ID to its reason.
func Evaluate(n Node, p compliance.Profile, waivers map[string]string) []Result {
	var out []Result
	for _, c := range n.checks(p) {
		v, detail := n.probe(c.Probe)
		if v == Fail && !c.Automated {
			v = Warn
		}
		out = append(out, Result{Check: c, Verdict: v, Detail: detail, Waiver: waivers[c.ID]})
	}
	return out
}

// PlannedDetail is the detail of a check a dry run lists (Planned).
const PlannedDetail = "dry run: not evaluated; the real run evaluates it once the node is made"

// Planned lists, without reading anything, the checks of profile p that
// Evaluate would evaluate on node n (only n.ControlPlane counts), in the
// catalogue's order, each with verdict NotEvaluated, detail PlannedDetail
// and its waiver: what a dry run can truthfully say before the node exists.
func Planned(n Node, p compliance.Profile, waivers map[string]string) []Result {
	var out []Result
	for _, c := range n.checks(p) {
		out = append(out, Result{Check: c, Verdict: NotEvaluated, Detail: PlannedDetail, Waiver: waivers[c.ID]})
	}
	return out
}

// checks are the checks of p with a probe that concern n.
func (n Node) checks(p compliance.Profile) []compliance.Check {
	var out []compliance.Check
	for _, c := range compliance.Checks(p) {
		if c.Probe != nil && n.concerns(c.Scope) {
			out = append(out, c)
		}
	}
	return out
}

func (n Node) concerns(s compliance.Scope) bool {
	switch s {
	case compliance.ScopeNode:
		return true
	case compliance.ScopeMaster, compliance.ScopeEtcd, compliance.ScopeControlPlane:
		return n.ControlPlane
	}
	return false
}

func (n Node) probe(p *compliance.Probe) (Verdict, string) {
	switch p.Kind {
	case compliance.ProbeFileMode, compliance.ProbeFileOwner:
		return n.fileProbe(p)
	case compliance.ProbeFlag:
		flags, ok, err := n.flags(p.Component)
		if err != nil {
			return Fail, err.Error()
		}
		if !ok {
			if p.Component == compliance.Etcd && n.EtcdDataDir == "" {
				return NotApplicable, "external etcd"
			}
			return Fail, p.Component + ": no manifest, unit or configuration found"
		}
		return compare(p, flags)
	case compliance.ProbeAnonymous:
		return n.anonymous()
	case compliance.ProbeEncryption:
		return n.encryption()
	}
	return Fail, "unknown probe " + string(p.Kind)
}

// compare evaluates a flag probe on a component's flags.
func compare(p *compliance.Probe, flags map[string]string) (Verdict, string) {
	v, set := flags[p.Flag]
	show := "--" + p.Flag + "=" + v
	if !set {
		show = "--" + p.Flag + " not set"
	}
	switch {
	case p.Op == compliance.OpUnset:
		return verdict(!set), show
	case !set:
		return verdict(p.UnsetOK), show
	}
	elems := strings.Split(v, ",")
	var ok bool
	switch p.Op {
	case compliance.OpSet:
		ok = true
	case compliance.OpEq:
		ok = strings.EqualFold(v, p.Value)
	case compliance.OpNotEq:
		ok = !strings.EqualFold(v, p.Value)
	case compliance.OpGTE:
		a, err1 := strconv.Atoi(v)
		b, err2 := strconv.Atoi(p.Value)
		ok = err1 == nil && err2 == nil && a >= b
	case compliance.OpHas:
		ok = slices.Contains(elems, p.Value)
	case compliance.OpNotHas:
		ok = !slices.Contains(elems, p.Value)
	case compliance.OpValidElements:
		allowed := strings.Split(p.Value, ",")
		ok = true
		for _, e := range elems {
			ok = ok && slices.Contains(allowed, e)
		}
	}
	return verdict(ok), show
}

func verdict(ok bool) Verdict {
	if ok {
		return Pass
	}
	return Fail
}

// files resolves a probe's file to the machine paths that exist.
func (n Node) files(f compliance.File) []string {
	var cands []string
	switch f {
	case compliance.FileAPIServerPod:
		cands = []string{n.componentFile(compliance.KubeAPIServer)}
	case compliance.FileControllerManagerPod:
		cands = []string{n.componentFile(compliance.KubeControllerManager)}
	case compliance.FileSchedulerPod:
		cands = []string{n.componentFile(compliance.KubeScheduler)}
	case compliance.FileEtcdPod:
		cands = []string{n.componentFile(compliance.Etcd)}
	case compliance.FileEtcdDataDir:
		cands = []string{n.EtcdDataDir}
	case compliance.FileAdminConf:
		cands = []string{path.Join(KubernetesDir, "admin.conf"), path.Join(KubernetesDir, "super-admin.conf")}
	case compliance.FileSchedulerConf:
		cands = []string{path.Join(KubernetesDir, "scheduler.conf")}
	case compliance.FileControllerManagerConf:
		cands = []string{path.Join(KubernetesDir, "controller-manager.conf")}
	case compliance.FilePKI, compliance.FilePKICerts, compliance.FilePKIKeys:
		_ = filepath.WalkDir(n.host(n.CertificatesDir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(n.host("/"), p)
			mp := "/" + filepath.ToSlash(rel)
			switch {
			case f == compliance.FilePKI,
				f == compliance.FilePKICerts && strings.HasSuffix(mp, ".crt"),
				f == compliance.FilePKIKeys && strings.HasSuffix(mp, ".key"):
				cands = append(cands, mp)
			}
			return nil
		})
	case compliance.FileKubeletService:
		cands = KubeletServiceFiles
	case compliance.FileKubeletConf:
		cands = []string{KubeletKubeconfig}
	case compliance.FileKubeletConfig:
		cands = []string{KubeletConfigFile}
	case compliance.FileKubeletCA:
		if ca := n.kubeletClientCA(); ca != "" {
			cands = []string{ca}
		}
	case compliance.FileProxyKubeconfig:
		cands = []string{ProxyKubeconfig}
	}
	var out []string
	for _, c := range cands {
		if c == "" {
			continue
		}
		if _, err := os.Lstat(n.host(c)); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func (n Node) fileProbe(p *compliance.Probe) (Verdict, string) {
	paths := n.files(p.File)
	if len(paths) == 0 {
		return NotApplicable, string(p.File) + ": none on this node"
	}
	names := loadNames(n.Root)
	for _, mp := range paths {
		fi, err := os.Lstat(n.host(mp))
		if err != nil {
			return Fail, err.Error()
		}
		if p.Kind == compliance.ProbeFileMode {
			if m := uint32(fi.Mode().Perm()); m&^p.Max != 0 {
				return Fail, fmt.Sprintf("%s has mode %04o (want %04o or stricter)", mp, m, p.Max)
			}
			continue
		}
		uid, gid, ok := fileOwner(fi)
		if !ok {
			return Fail, mp + ": no owner information"
		}
		if got := names.user(uid) + ":" + names.group(gid); got != p.Owner {
			return Fail, fmt.Sprintf("%s is owned by %s (want %s)", mp, got, p.Owner)
		}
	}
	if p.Kind == compliance.ProbeFileMode {
		return Pass, fmt.Sprintf("%s: mode %04o or stricter", strings.Join(paths, ", "), p.Max)
	}
	return Pass, fmt.Sprintf("%s: owned by %s", strings.Join(paths, ", "), p.Owner)
}

// anonymous is the API server's anonymous access: off, limited to
// compliance.AnonymousPaths (WARN: limited, not off), or open.
func (n Node) anonymous() (Verdict, string) {
	flags, ok, err := n.flags(compliance.KubeAPIServer)
	switch {
	case err != nil:
		return Fail, err.Error()
	case !ok:
		return Fail, "kube-apiserver: no manifest or unit found"
	case strings.EqualFold(flags["anonymous-auth"], "false"):
		return Pass, "--anonymous-auth=false"
	}
	file := flags["authentication-config"]
	if file == "" {
		return Fail, "anonymous requests allowed on every path (no --anonymous-auth=false, no --authentication-config)"
	}
	var cfg struct {
		Anonymous *struct {
			Enabled    bool `json:"enabled"`
			Conditions []struct {
				Path string `json:"path"`
			} `json:"conditions"`
		} `json:"anonymous"`
	}
	data, err := os.ReadFile(n.host(file))
	if err != nil {
		return Fail, err.Error()
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return Fail, file + ": " + err.Error()
	}
	switch a := cfg.Anonymous; {
	case a == nil || a.Enabled && len(a.Conditions) == 0:
		return Fail, file + ": anonymous requests allowed on every path"
	case !a.Enabled:
		return Pass, file + ": anonymous requests off"
	default:
		var paths []string
		for _, c := range a.Conditions {
			if !slices.Contains(compliance.AnonymousPaths, c.Path) {
				return Fail, file + ": anonymous requests allowed on " + c.Path
			}
			paths = append(paths, c.Path)
		}
		return Warn, "anonymous requests limited to " + strings.Join(paths, ", ") + " (kubeadm's token discovery reads cluster-info anonymously)"
	}
}

// encryption is the API server's encryption at rest of Secrets: its
// first provider must be aescbc, secretbox or kms (CIS 1.2.28).
func (n Node) encryption() (Verdict, string) {
	flags, ok, err := n.flags(compliance.KubeAPIServer)
	if err != nil || !ok {
		return Fail, "kube-apiserver: no manifest or unit found"
	}
	file := flags["encryption-provider-config"]
	if file == "" {
		return Fail, "--encryption-provider-config not set"
	}
	var cfg struct {
		Resources []struct {
			Resources []string         `json:"resources"`
			Providers []map[string]any `json:"providers"`
		} `json:"resources"`
	}
	data, err := os.ReadFile(n.host(file))
	if err != nil {
		return Fail, err.Error()
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return Fail, file + ": not an EncryptionConfiguration"
	}
	for _, r := range cfg.Resources {
		if !slices.Contains(r.Resources, "secrets") && !slices.Contains(r.Resources, "*.*") || len(r.Providers) == 0 {
			continue
		}
		for name := range r.Providers[0] {
			switch name {
			case "aescbc", "secretbox", "kms":
				return Pass, "secrets encrypted by " + name
			case "aesgcm":
				// kube-bench's 1.2.28 takes aescbc, kms and secretbox
				// only: aesgcm's random nonces make a static key unsafe
				// after about 200 000 writes.
				return Fail, "secrets' first provider is aesgcm, which CIS 1.2.28 does not accept (aescbc, kms or secretbox)"
			}
			return Fail, "secrets' first provider is " + name
		}
	}
	return Fail, file + ": no provider for secrets"
}
