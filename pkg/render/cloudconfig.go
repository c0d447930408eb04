package render

import (
	"bytes"

	yaml "go.yaml.in/yaml/v3"
)

// cloudConfig is the subset of cloud-init's cloud-config used: the
// write_files and runcmd modules only (cloud-init module names cc_write_files
// and cc_runcmd).
type cloudConfig struct {
	WriteFiles []writeFile `yaml:"write_files"`
	RunCmd     [][]string  `yaml:"runcmd,flow"`
}

// writeFile is one write_files entry, owned by root:root (cloud-init's
// default owner). Content is always "gz+b64" so that no byte of the spec
// can break the YAML or be read as a Jinja template.
type writeFile struct {
	Path        string `yaml:"path"`
	Permissions string `yaml:"permissions"`
	Encoding    string `yaml:"encoding"`
	Content     string `yaml:"content"`
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
// sealed spec under 1,500 bytes (docs/bootstrap-data-sizes.md).
func renderCloudConfig(r *resolved, spec []byte) ([]byte, error) {
	var cc cloudConfig
	if r.Payload == nil {
		cc.WriteFiles = append(cc.WriteFiles, writeFile{
			Path: LinuxSpecPath, Permissions: "0600", Encoding: "gz+b64", Content: gzipBase64(spec),
		})
	}
	switch {
	case r.agentPath != "" && r.Payload == nil && r.Agent.SHA256 == "":
		cc.RunCmd = [][]string{{r.agentPath, "bootstrap", "-f", LinuxSpecPath}}
	case r.agentPath != "" && r.Payload == nil:
		cc.RunCmd = [][]string{{"/bin/sh", "-c", "echo " + shellQuote(r.Agent.SHA256+"  "+r.agentPath) + " | sha256sum -c --quiet && exec " +
			shellQuote(r.agentPath) + " bootstrap -f " + LinuxSpecPath}}
	default:
		script, err := execute("stub.sh.tmpl", newStub(r, spec, LinuxAgentPath, LinuxSpecPath, false))
		if err != nil {
			return nil, err
		}
		cc.WriteFiles = append(cc.WriteFiles, writeFile{
			Path: CloudConfigStubPath, Permissions: "0700", Encoding: "gz+b64", Content: gzipBase64(script),
		})
		cc.RunCmd = [][]string{{"/bin/sh", CloudConfigStubPath}}
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
	return b.Bytes(), nil
}
