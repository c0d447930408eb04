package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_4/types"

	"github.com/machineadm/machineadm/pkg/render/quote"
)

// Paths of the Ignition config's files besides the agent and the spec.
const (
	// IgnitionUnitName is the systemd unit that runs machineadm.
	IgnitionUnitName = "machineadm.service"
	// ignitionDigestPath holds "HEX  AGENT\n" for `sha256sum --check`.
	ignitionDigestPath = "/etc/machineadm/agent.sha256"
	// ignitionKeyPath and ignitionSigPath hold the pinned public key and the
	// downloaded signature.
	ignitionKeyPath = "/etc/machineadm/agent.pub"
	ignitionSigPath = "/etc/machineadm/agent.sig"
	// ignitionFetchPath is the script that fetches an agent from a
	// container registry (the shell stub's download code, run by the
	// unit's first ExecStartPre).
	ignitionFetchPath = "/etc/machineadm/fetch-agent.sh"
	// ignitionVerifyDropin checks the agent before every start.
	ignitionVerifyDropin = "10-verify-agent.conf"
)

// renderIgnition builds an Ignition config (spec version
// r.IgnitionVersion) with the config types of github.com/coreos/ignition/v2:
//
//   - storage.files: the agent at IgnitionAgentPath (mode 0755), fetched by
//     Ignition from the agent URL and checked against verification.hash
//     "sha256-HEX" before it is written (absent for an agent in the image);
//     the spec at LinuxSpecPath (mode 0600), inline as a gzip-compressed
//     data URL or fetched from the payload URL with its hash; the digest
//     file for sha256sum and, with a signature, the public key and the
//     signature;
//   - systemd.units: machineadm.service (contrib/systemd), enabled, with a
//     drop-in whose ExecStartPre lines check the digest (sha256sum) and the
//     signature (openssl) before machineadm runs;
//   - ignition.timeouts.httpTotal: FetchTimeoutSeconds, so Ignition's own
//     retries of a download are bounded in time;
//   - for an agent (or signature) in a container registry, whose anonymous
//     Bearer challenge Ignition's fetcher cannot answer: instead of the
//     agent file, the script ignitionFetchPath (the shell stub's download
//     code: bounded retries, token handshake, digest and signature checked
//     before the agent is installed), run by the drop-in's first
//     ExecStartPre; the digest is still checked before every start.
//
// The result passes the library's validation for that spec version.
func renderIgnition(r *resolved, spec []byte) ([]byte, error) {
	agent := IgnitionAgentPath
	if r.agentPath != "" {
		agent = r.agentPath
	}
	var cfg types.Config
	cfg.Ignition.Version = r.IgnitionVersion
	cfg.Ignition.Timeouts.HTTPTotal = ptr(FetchTimeoutSeconds)
	if r.caPEM != "" && !r.registry {
		cfg.Ignition.Security.TLS.CertificateAuthorities = []types.Resource{{Source: ptr(dataURL([]byte(r.caPEM)))}}
	}
	files := &cfg.Storage.Files
	var pre []string
	switch {
	case r.registry:
		// Ignition's fetcher cannot answer a registry's Bearer
		// challenge: the unit fetches the agent with the shell stub's
		// code (digest and signature checked before it is installed).
		script, err := execute("stub.sh.tmpl", &stub{
			AgentURL: r.Agent.URL, AgentSHA256: r.Agent.SHA256, AgentPath: agent,
			SignatureURL: r.Agent.SignatureURL, PublicKeyPEM: r.publicKeyPEM,
			SpecPath: LinuxSpecPath, Registry: true, FetchOnly: true, AgentCA: r.caPEM,
		})
		if err != nil {
			return nil, err
		}
		*files = append(*files, ignFile(ignitionFetchPath, 0o700, dataURL(gzipData(script)), "", true))
		pre = append(pre, "ExecStartPre=/bin/sh "+ignitionFetchPath) // constants, plain words
	case r.agentPath == "":
		*files = append(*files, ignFile(agent, 0o755, r.Agent.URL, r.Agent.SHA256, false))
	}
	if r.Payload != nil {
		*files = append(*files, ignFile(LinuxSpecPath, 0o600, r.Payload.URL, r.Payload.SHA256, false))
	} else {
		*files = append(*files, ignFile(LinuxSpecPath, 0o600, dataURL(gzipData(spec)), "", true))
	}
	if r.Agent.SHA256 != "" {
		*files = append(*files, ignFile(ignitionDigestPath, 0o644, dataURL([]byte(r.Agent.SHA256+"  "+agent+"\n")), "", false))
		pre = append(pre, "ExecStartPre=/usr/bin/sha256sum --check --quiet "+ignitionDigestPath) // constants, plain words
	}
	if r.Agent.SignatureURL != "" && !r.registry {
		*files = append(*files,
			ignFile(ignitionKeyPath, 0o644, dataURL([]byte(r.publicKeyPEM)), "", false),
			ignFile(ignitionSigPath, 0o644, r.Agent.SignatureURL, "", false))
		// agent is a plain path (quote.SystemdExecPath, checked by
		// resolve), so it is one sh word as it is.
		script, err := quote.SystemdArg(fmt.Sprintf("base64 -d %s >/run/machineadm-agent.sig && "+
			"openssl dgst -sha256 -verify %s -signature /run/machineadm-agent.sig %s", ignitionSigPath, ignitionKeyPath, agent))
		if err != nil {
			return nil, err
		}
		pre = append(pre, "ExecStartPre=/bin/sh -c "+script)
	}
	unit := types.Unit{Name: IgnitionUnitName, Enabled: ptr(true), Contents: ptr(SystemdUnit(agent, LinuxSpecPath))}
	if len(pre) > 0 {
		dropin := "[Service]\n" + strings.Join(pre, "\n") + "\n"
		unit.Dropins = []types.Dropin{{Name: ignitionVerifyDropin, Contents: &dropin}}
	}
	cfg.Systemd.Units = []types.Unit{unit}

	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if raw, err = pruneJSON(raw); err != nil {
		return nil, err
	}
	if err := validateIgnition(raw, r.IgnitionVersion); err != nil {
		return nil, err
	}
	return append(raw, '\n'), nil
}

// ignFile is one storage.files entry owned by root, replacing any file at
// path. compressed marks gzip content; sha256 adds verification.hash.
func ignFile(path string, mode int, source, sha256 string, compressed bool) types.File {
	f := types.File{Node: types.Node{Path: path, Overwrite: ptr(true)}}
	f.Mode = &mode
	f.Contents.Source = &source
	if compressed {
		f.Contents.Compression = ptr("gzip")
	}
	if sha256 != "" {
		f.Contents.Verification.Hash = ptr("sha256-" + sha256)
	}
	return f
}

// dataURL encodes data as an RFC 2397 base64 data URL.
func dataURL(data []byte) string {
	return "data:;base64," + base64.StdEncoding.EncodeToString(data)
}

// pruneJSON drops empty objects and arrays, which the Ignition types emit
// for every unset nested struct, and re-encodes compactly with sorted keys.
func pruneJSON(raw []byte) ([]byte, error) {
	var tree any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&tree); err != nil {
		return nil, err
	}
	tree, _ = prune(tree)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tree); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// prune removes empty maps and slices below v; it reports whether v itself
// is empty.
func prune(v any) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			c, empty := prune(child)
			if empty {
				delete(t, k)
			} else {
				t[k] = c
			}
		}
		return t, len(t) == 0
	case []any:
		kept := t[:0]
		for _, child := range t {
			if c, empty := prune(child); !empty {
				kept = append(kept, c)
			}
		}
		return kept, len(kept) == 0
	}
	return v, false
}

func ptr[T any](v T) *T { return &v }
