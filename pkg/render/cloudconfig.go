package render

import (
	"bytes"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/machineadm/machineadm/pkg/render/quote"
)

// cloudConfig is the subset of cloud-init's cloud-config used: the
// write_files and runcmd modules only (cloud-init module names cc_write_files
// and cc_runcmd).
type cloudConfig struct {
	WriteFiles []writeFile          `yaml:"write_files"`
	RunCmd     [][]quote.YAMLString `yaml:"runcmd,flow"`
}

// writeFile is one write_files entry, owned by root:root (cloud-init's
// default owner). Content is "gz+b64", so that no byte of the spec can
// break the YAML or be read as a Jinja template, except in a gzip-compressed
// cloud-config (Options.Gzip), where text that YAML carries exactly (see
// plainText) is written as is (no encoding: cloud-init's "text/plain").
type writeFile struct {
	Path        quote.YAMLString `yaml:"path"`
	Permissions quote.YAMLString `yaml:"permissions"`
	Encoding    quote.YAMLString `yaml:"encoding,omitempty"`
	Content     quote.YAMLString `yaml:"content"`
}

// fileEntry is the write_files entry of data at path with mode perm: plain
// text in a gzip-compressed cloud-config when data is plainText, gz+b64
// otherwise.
func fileEntry(r *resolved, path, perm string, data []byte) writeFile {
	if r.Gzip && plainText(data) {
		return writeFile{Path: quote.YAMLString(path), Permissions: quote.YAMLString(perm), Content: quote.YAMLString(data)}
	}
	return writeFile{Path: quote.YAMLString(path), Permissions: quote.YAMLString(perm), Encoding: "gz+b64", Content: quote.YAMLString(gzipBase64(data))}
}

// plainText reports whether data can travel as a YAML string that
// cloud-init writes back byte for byte: valid UTF-8 ending in a newline,
// with no control characters other than tab and newline (no CR, which
// YAML folds), no byte-order mark, and no line ending in white space (a
// block scalar would still carry it, but the encoder then falls back to a
// quoted style that is harder to read than gz+b64 is small).
func plainText(data []byte) bool {
	if len(data) == 0 || data[len(data)-1] != '\n' || !utf8.Valid(data) || bytes.HasPrefix(data, []byte("\ufeff")) {
		return false
	}
	for _, line := range bytes.Split(data[:len(data)-1], []byte("\n")) {
		if len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
			return false
		}
		for _, c := range string(line) {
			if c != '\t' && (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == 0x2028 || c == 0x2029) {
				return false
			}
		}
	}
	return true
}

// cloudConfigHeader starts the document. It is never "## template: jinja":
// cloud-init would then render the user data as a template.
const cloudConfigHeader = "#cloud-config\n"

// renderCloudConfig builds a cloud-config whose write_files writes the spec
// (LinuxSpecPath, 0600, unless it comes from a payload URL) and the stub
// (CloudConfigStubPath, 0700), and whose runcmd runs the stub with /bin/sh.
// With the agent in the image and the spec inline there is nothing to
// fetch, so there is no stub: runcmd runs the agent itself, after
// `sha256sum -c` when a digest is pinned. That keeps a worker join with a
// sealed spec under 1,500 bytes (docs/bootstrap-data-sizes.md). With
// r.Gzip the document is gzip-compressed whole (fileEntry).
func renderCloudConfig(r *resolved, spec []byte) ([]byte, error) {
	var cc cloudConfig
	if r.Payload == nil {
		cc.WriteFiles = append(cc.WriteFiles, fileEntry(r, LinuxSpecPath, "0600", spec))
	}
	switch {
	case r.agentPath != "" && r.Payload == nil && r.Agent.SHA256 == "":
		cc.RunCmd = [][]quote.YAMLString{{quote.YAMLString(r.agentPath), "bootstrap", "-f", LinuxSpecPath}}
	case r.agentPath != "" && r.Payload == nil:
		cc.RunCmd = [][]quote.YAMLString{{"/bin/sh", "-c", quote.YAMLString("echo " + quote.Sh(r.Agent.SHA256+"  "+r.agentPath) + " | sha256sum -c --quiet && exec " +
			quote.Sh(r.agentPath) + " bootstrap -f " + LinuxSpecPath)}}
	default:
		script, err := execute("stub.sh.tmpl", newStub(r, spec, LinuxAgentPath, LinuxSpecPath, false))
		if err != nil {
			return nil, err
		}
		cc.WriteFiles = append(cc.WriteFiles, fileEntry(r, CloudConfigStubPath, "0700", script))
		cc.RunCmd = [][]quote.YAMLString{{"/bin/sh", CloudConfigStubPath}}
	}

	var b bytes.Buffer
	b.WriteString(cloudConfigHeader)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(&cc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	if r.Gzip {
		return gzipData(b.Bytes()), nil
	}
	return b.Bytes(), nil
}
