package containerd

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/redact"
)

// ProxyDropIn is the systemd drop-in that sets containerd's proxy
// environment (systemd.unit(5) drop-ins, systemd.exec(5) Environment=).
// It is removed when the spec has no proxy.
const ProxyDropIn = "/etc/systemd/system/containerd.service.d/10-machineadm-proxy.conf"

// ProxyMode returns the drop-in's permission bits for p: 0600 when
// httpProxy or httpsProxy carries user information (a password, or a
// token as the user name; redact.URLHasCredentials), since systemd
// drop-ins are otherwise world-readable; else 0644. secret is true in the
// 0600 case: the content is then hidden from dry-run diffs.
func ProxyMode(p *machineadm.Proxy) (mode uint32, secret bool) {
	if p != nil && (redact.URLHasCredentials(p.HTTPProxy) || redact.URLHasCredentials(p.HTTPSProxy)) {
		return 0o600, true
	}
	return 0o644, false
}

// RenderProxy returns the drop-in for p, or nil when p sets nothing.
// Both upper- and lower-case variables are set (Go reads either; other
// tools started by containerd, such as shims and hooks, may read only
// one). Values are quoted for systemd: '\' and '"' are escaped and '%' is
// doubled so that systemd does not expand specifiers.
func RenderProxy(p *machineadm.Proxy) []byte {
	if p == nil || (p.HTTPProxy == "" && p.HTTPSProxy == "" && p.NoProxy == "") {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("# Written by machineadm from spec.host.containerd.proxy; do not edit, change the machine spec instead.\n")
	b.WriteString("[Service]\n")
	for _, kv := range []struct{ name, value string }{
		{"HTTP_PROXY", p.HTTPProxy}, {"HTTPS_PROXY", p.HTTPSProxy}, {"NO_PROXY", p.NoProxy},
	} {
		if kv.value == "" {
			continue
		}
		for _, name := range []string{kv.name, strings.ToLower(kv.name)} {
			fmt.Fprintf(&b, "Environment=\"%s=%s\"\n", name, systemdQuote(kv.value))
		}
	}
	return b.Bytes()
}

func systemdQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`)
	return r.Replace(s)
}
