package containerd

import (
	"bytes"
	"fmt"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// File is one file to write for containerd, with its machine path.
type File struct {
	// Path is the absolute machine path.
	Path string
	// Content is the file's content.
	Content []byte
	// Mode is the permission bits.
	Mode uint32
	// Secret marks key material: written 0600 and never shown in diffs.
	Secret bool
}

// hostsHeader is the comment at the top of each hosts.toml.
const hostsHeader = "# Written by machineadm from spec.host.containerd.registries; do not edit, change the machine spec instead.\n"

// hostTable is the [host."URL"] table, or the top level for the server
// (containerd docs/hosts.md).
type hostTable struct {
	Server       string     `toml:"server,omitempty"`
	Capabilities []string   `toml:"capabilities,omitempty"`
	CA           string     `toml:"ca,omitempty"`
	Client       [][]string `toml:"client,omitempty"`
	SkipVerify   bool       `toml:"skip_verify,omitempty"`
	OverridePath bool       `toml:"override_path,omitempty"`
}

// RegistryDir returns the hosts directory of a registry host:
// ConfigPath/HOST, where HOST keeps its ":port" as containerd looks it up.
func RegistryDir(host string) string { return path.Join(ConfigPath, host) }

// HostsFiles returns, for each registry, its hosts.toml and the
// certificate files it references, in the spec's order:
//
//	/etc/containerd/certs.d/HOST/hosts.toml
//	/etc/containerd/certs.d/HOST/ca.crt, client.crt, client.key   (server)
//	/etc/containerd/certs.d/HOST/mirror-N-ca.crt, -client.crt, -client.key
//
// The server defaults to "https://HOST". Mirrors keep their order (the
// order containerd tries them in): each [host."URL"] table header is
// written in order and its body encoded on its own, since TOML maps carry
// no order.
func HostsFiles(regs []machineadm.Registry) ([]File, error) {
	var out []File
	for i, r := range regs {
		if err := checkUTF8(r); err != nil {
			return nil, fmt.Errorf("registries[%d]: %w", i, err)
		}
		dir := RegistryDir(r.Host)
		server := r.Server
		if server == "" {
			server = "https://" + r.Host
		}
		top := hostTable{Server: server, SkipVerify: r.SkipVerify}
		top.CA, top.Client, out = tlsFiles(dir, "", r.CACert, r.ClientCert, r.ClientKey, out)
		var b bytes.Buffer
		b.WriteString(hostsHeader)
		if err := toml.NewEncoder(&b).Encode(top); err != nil {
			return nil, fmt.Errorf("registry %s: %w", r.Host, err)
		}
		for i, m := range r.Mirrors {
			if _, err := url.Parse(m.URL); err != nil {
				return nil, fmt.Errorf("registry %s mirror %d: %w", r.Host, i, err)
			}
			h := hostTable{Capabilities: m.Capabilities, SkipVerify: m.SkipVerify, OverridePath: m.OverridePath}
			h.CA, h.Client, out = tlsFiles(dir, fmt.Sprintf("mirror-%d-", i), m.CACert, m.ClientCert, m.ClientKey, out)
			key, err := quoteKey(m.URL)
			if err != nil {
				return nil, fmt.Errorf("registry %s mirror %d: %w", r.Host, i, err)
			}
			body, err := toml.Marshal(h)
			if err != nil {
				return nil, fmt.Errorf("registry %s mirror %d: %w", r.Host, i, err)
			}
			fmt.Fprintf(&b, "\n[host.%s]\n", key)
			for _, line := range strings.SplitAfter(string(body), "\n") {
				if line != "" {
					b.WriteString("  " + line)
				}
			}
		}
		out = append(out, File{Path: path.Join(dir, "hosts.toml"), Content: b.Bytes(), Mode: 0o644})
	}
	return out, nil
}

// checkUTF8 refuses a registry whose strings are not UTF-8: TOML text is
// UTF-8, and the encoder would change such bytes, so containerd would read
// another host or URL than the spec's (found by FuzzHostsFiles). Specs
// decoded from YAML are always UTF-8; this guards other callers.
func checkUTF8(r machineadm.Registry) error {
	strs := []string{r.Host, r.Server}
	for _, m := range r.Mirrors {
		strs = append(strs, m.URL)
		strs = append(strs, m.Capabilities...)
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%q is not UTF-8", s)
		}
	}
	return nil
}

// quoteKey quotes s as a TOML key, with go-toml's own quoting.
func quoteKey(s string) (string, error) {
	out, err := toml.Marshal(map[string]string{"k": s})
	if err != nil {
		return "", err
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "k = ")
	if !ok {
		return "", fmt.Errorf("cannot quote %q as a TOML key", s)
	}
	return v, nil
}

// tlsFiles appends the CA and client certificate files of one host and
// returns the values of its ca and client keys.
func tlsFiles(dir, prefix, ca, cert, key string, out []File) (string, [][]string, []File) {
	var caPath string
	var client [][]string
	if ca != "" {
		caPath = path.Join(dir, prefix+"ca.crt")
		out = append(out, File{Path: caPath, Content: []byte(ca), Mode: 0o644})
	}
	if cert != "" && key != "" {
		certPath, keyPath := path.Join(dir, prefix+"client.crt"), path.Join(dir, prefix+"client.key")
		out = append(out,
			File{Path: certPath, Content: []byte(cert), Mode: 0o644},
			File{Path: keyPath, Content: []byte(key), Mode: 0o600, Secret: true})
		client = [][]string{{certPath, keyPath}}
	}
	return caPath, client, out
}
