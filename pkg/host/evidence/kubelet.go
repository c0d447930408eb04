package evidence

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// kubeletConfigFlags maps a kubelet flag to its KubeletConfiguration field
// path (the flags the checks read).
var kubeletConfigFlags = map[string][]string{
	"anonymous-auth":                    {"authentication", "anonymous", "enabled"},
	"authorization-mode":                {"authorization", "mode"},
	"client-ca-file":                    {"authentication", "x509", "clientCAFile"},
	"read-only-port":                    {"readOnlyPort"},
	"streaming-connection-idle-timeout": {"streamingConnectionIdleTimeout"},
	"make-iptables-util-chains":         {"makeIPTablesUtilChains"},
	"event-qps":                         {"eventRecordQPS"},
	"rotate-certificates":               {"rotateCertificates"},
	"rotate-server-certificates":        {"serverTLSBootstrap"},
	"tls-cipher-suites":                 {"tlsCipherSuites"},
	"tls-min-version":                   {"tlsMinVersion"},
	"tls-cert-file":                     {"tlsCertFile"},
	"pod-max-pids":                      {"podPidsLimit"},
	"seccomp-default":                   {"seccompDefault"},
	"protect-kernel-defaults":           {"protectKernelDefaults"},
	"pod-manifest-path":                 {"staticPodPath"},
}

// kubeletFlags is the kubelet's effective settings as flags: its
// configuration file's fields, overridden by the flags kubeadm gives it
// (kubeadm-flags.env), as the kubelet itself resolves them.
func (n Node) kubeletFlags() (map[string]string, bool, error) {
	data, err := os.ReadFile(n.host(KubeletConfigFile))
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, false, fmt.Errorf("%s: %w", KubeletConfigFile, err)
	}
	out := map[string]string{}
	for f, p := range kubeletConfigFlags {
		var v any = cfg
		for _, k := range p {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[k]
		}
		if s, ok := flagString(v); ok {
			out[f] = s
		}
	}
	env, err := os.ReadFile(n.host(KubeletFlagsFile))
	if err != nil && !os.IsNotExist(err) {
		return nil, false, err
	}
	for _, line := range strings.Split(string(env), "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), kubeletFlagsEnvVar+"=")
		if !ok {
			continue
		}
		for k, val := range parseFlags(strings.Fields(strings.Trim(v, `"`))) {
			out[k] = val
		}
	}
	return out, true, nil
}

// flagString renders a configuration value as its flag would read; ok is
// false for an absent value or an empty string (the kubelet's "unset").
func flagString(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, x != ""
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, _ := flagString(e)
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), len(parts) > 0
	}
	return fmt.Sprint(v), true
}

// kubeletClientCA is the kubelet's client CA file; "" when unknown.
func (n Node) kubeletClientCA() string {
	f, ok, err := n.kubeletFlags()
	if err != nil || !ok {
		return ""
	}
	return f["client-ca-file"]
}
