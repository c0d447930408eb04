// Package evidence evaluates a security profile's checks on a node that
// was just made (spec.security.profile): the live files, their modes and
// owners, the flags of etcd, the control-plane components and the kubelet
// (from kubeadm's static pod manifests or the Systemd runtime's units, and
// the kubelet's kubeadm-flags.env), and the kubelet's configuration file;
// and it applies the profile's file remediations that only exist once
// kubeadm ran (Harden). Everything goes through a root prefix; it reads
// the checks from pkg/apis/machineadm/compliance.
package evidence

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/compliance"
)

// The machine paths the evidence reads (kubeadm's and the kubelet's).
const (
	ManifestDir        = "/etc/kubernetes/manifests"
	UnitDir            = "/etc/systemd/system"
	KubeletConfigFile  = "/var/lib/kubelet/config.yaml"
	KubeletFlagsFile   = "/var/lib/kubelet/kubeadm-flags.env"
	KubeletKubeconfig  = "/etc/kubernetes/kubelet.conf"
	ProxyKubeconfig    = "/var/lib/kube-proxy/kubeconfig"
	KubernetesDir      = "/etc/kubernetes"
	kubeletFlagsEnvVar = "KUBELET_KUBEADM_ARGS"
)

// KubeletServiceFiles are the kubelet's unit files the profile hardens and
// checks (CIS 4.1.1, 4.1.2): those of kube-bench's list and the
// distribution packages' /usr/lib paths, where they exist.
var KubeletServiceFiles = []string{
	"/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
	"/etc/systemd/system/kubelet.service",
	"/lib/systemd/system/kubelet.service",
	"/usr/lib/systemd/system/kubelet.service",
	"/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
}

// Node describes the node the evidence looks at.
type Node struct {
	// Root is the root prefix ("/" on a host).
	Root string
	// ControlPlane says the node runs the control plane.
	ControlPlane bool
	// Systemd says the control plane runs as systemd units, not static pods.
	Systemd bool
	// EtcdDataDir is the local etcd member's data directory; "" with an
	// external etcd.
	EtcdDataDir string
	// CertificatesDir is kubeadm's certificatesDir ("/etc/kubernetes/pki").
	CertificatesDir string
}

func (n Node) host(p string) string { return filepath.Join(n.Root, filepath.FromSlash(p)) }

// componentFile is the manifest (static pods) or unit file (Systemd) of a
// control-plane component.
func (n Node) componentFile(c string) string {
	if n.Systemd {
		return path.Join(UnitDir, c+".service")
	}
	return path.Join(ManifestDir, c+".yaml")
}

// flags returns a component's flags, name without "--" → value (a flag
// without a value reads "true"); ok=false when its manifest, unit or (for
// the kubelet) configuration is absent.
func (n Node) flags(c string) (map[string]string, bool, error) {
	if c == compliance.Kubelet {
		return n.kubeletFlags()
	}
	data, err := os.ReadFile(n.host(n.componentFile(c)))
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var argv []string
	if n.Systemd {
		if argv, err = execStart(data); err == nil {
			argv = resolveCredentials(data, argv)
		}
	} else {
		argv, err = podCommand(data)
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", n.componentFile(c), err)
	}
	return parseFlags(argv), true, nil
}

// podCommand is the command and arguments of a static pod's first
// container.
func podCommand(data []byte) ([]string, error) {
	var pod corev1.Pod
	if err := yaml.Unmarshal(data, &pod); err != nil {
		return nil, err
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, fmt.Errorf("no container")
	}
	c := pod.Spec.Containers[0]
	return append(append([]string{}, c.Command...), c.Args...), nil
}

// execStart splits a unit's ExecStart= line (with its continuation
// lines) into words: words are
// separated by blanks, double or single quotes group, a backslash escapes
// the next character, "%%" is "%" and "$$" is "$" (systemd.service(5);
// pkg/host/cpunits writes them so).
func execStart(data []byte) ([]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "ExecStart=")
		if !ok {
			continue
		}
		// A line ending in a backslash continues on the next (cpunits
		// writes one argument per line).
		for strings.HasSuffix(line, `\`) && sc.Scan() {
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(sc.Text())
		}
		// "%d" (the credentials directory) becomes a marker no unit text
		// holds, so resolveCredentials resolves that specifier only, not
		// a literal "%d" a value carries (written "%%d").
		line = strings.NewReplacer("%%", "%", "%d", credentialsMarker, "$$", "$").Replace(line)
		var words []string
		var cur strings.Builder
		in, quote, esc := false, rune(0), false
		for _, r := range line {
			switch {
			case esc:
				cur.WriteRune(r)
				esc, in = false, true
			case r == '\\':
				esc = true
			case quote != 0 && r == quote:
				quote = 0
			case quote != 0:
				cur.WriteRune(r)
			case r == '"' || r == '\'':
				quote, in = r, true
			case r == ' ' || r == '\t':
				if in {
					words = append(words, cur.String())
					cur.Reset()
					in = false
				}
			default:
				cur.WriteRune(r)
				in = true
			}
		}
		if in {
			words = append(words, cur.String())
		}
		return words, nil
	}
	return nil, fmt.Errorf("no ExecStart= line")
}

// credentialsMarker stands in the words execStart returns for the
// specifier "%d" of a unit's credentials directory (systemd.exec(5),
// "Credentials"; cpunits.Credential); resolveCredentials replaces it.
const credentialsMarker = "\x00credentials-directory\x00"

// resolveCredentials replaces, in the words of a unit's ExecStart= (from
// execStart), a value "%d/ID" by the file its LoadCredential=ID:PATH
// line loads: the file the process reads (pkg/host/cpunits hands keys,
// certificates and configuration files to the units so). A "%d" of an ID
// the unit does not load is kept as "%d"; a literal "%d" in a value
// (written "%%d") is not a credential.
func resolveCredentials(unit []byte, argv []string) []string {
	creds := map[string]string{}
	for _, l := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "LoadCredential="); ok {
			if id, p, ok := strings.Cut(v, ":"); ok {
				creds[id] = strings.ReplaceAll(p, "%%", "%")
			}
		}
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		if j := strings.Index(a, credentialsMarker+"/"); j >= 0 {
			if p, ok := creds[a[j+len(credentialsMarker)+1:]]; ok {
				a = a[:j] + p
			}
		}
		out[i] = strings.ReplaceAll(a, credentialsMarker, "%d")
	}
	return out
}

// parseFlags reads "--name=value" and "--name" words (the first word,
// the program, and every other word are ignored: kubeadm writes every
// flag as --name=value).
func parseFlags(argv []string) map[string]string {
	out := map[string]string{}
	for _, a := range argv {
		name, ok := strings.CutPrefix(a, "--")
		if !ok || name == "" {
			continue
		}
		if k, v, ok := strings.Cut(name, "="); ok {
			out[k] = v
		} else {
			out[name] = "true"
		}
	}
	return out
}
