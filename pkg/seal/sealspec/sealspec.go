package sealspec

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/redact"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/spec"
)

// SealedFileDir is where a sealed spec points a SecretSource whose value
// was inline: /etc/machineadm/sealed/<item path>. The file is never read
// when the envelope carries the item.
const SealedFileDir = "/etc/machineadm/sealed"

// SealOptions say what SealSpec seals and for whom.
type SealOptions struct {
	// Recipients are recipient strings (seal.ParseRecipient). At least one.
	Recipients []string
	// MachineName binds the envelope to a node name; seal.AnyMachine ("*")
	// makes a template. Default: the spec's spec.node.name; required when
	// that is empty.
	MachineName string
	// Root is prefixed to every file the spec references (token and
	// certificate key files, spec.controlPlane.pki.dir), each resolved
	// inside it as on the machine: symbolic links, absolute ones too,
	// never lead out of it. Default "/". The paths of a spec.os windows
	// spec are on drives: 'D:\x\y' is read from Root/D/x/y, and a path
	// without a drive from Root/C/... (the system drive) — unless Root is
	// itself the root of a drive of the sealing host ('C:\', what "/"
	// means on Windows), where each drive path is read from its own drive
	// (sealRoot).
	Root string
	// Files, when not nil, holds the secret files by machine path, as the
	// spec names them ("/x/y"; for a spec.os windows spec 'D:\x\y', or a
	// path without a drive on the system drive C), and is read instead of
	// Root: a path it does not hold is a file that does not exist. Each
	// file is at most redact.MaxSecretFileSize bytes, as on disk. A caller
	// that holds the secrets in memory (the Cluster API controller) need
	// not write them to disk to seal them.
	Files map[string][]byte
}

// OptionError refuses a SealOptions field: a recipient string that does
// not parse, a machine name the envelope cannot hold. SealSpec returns it
// before any secret is read or any recipient (a KMS) is called; the
// command line maps it to a usage error.
type OptionError struct {
	// Option names the field, "Recipients[1]" or "MachineName".
	Option string
	// Err is the cause; it never quotes a secret.
	Err error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// Sealed is the result of SealSpec.
type Sealed struct {
	// File is the self-contained multi-document file: the clear spec, a
	// "---" line and the SealedSecrets envelope.
	File []byte
	// Items are the sealed field paths, sorted.
	Items []string
	// Binding is what the envelope is bound to: cluster, machine and the
	// digest of the clear spec in File.
	Binding seal.Binding
	// InClear are the fields SealSpec does not seal and File still holds
	// in the clear although the secret-shape detector
	// (validation.SecretShapes) finds a secret there, sorted: URLs with
	// credentials or a presigned query, keys, tokens or passwords pasted
	// into a readable file, a static pod manifest or the containerd config
	// patch, credentials in component flags. render refuses such a file
	// without --insecure-inline-secrets; `machineadm seal` warns about each
	// and writes the file owner-only.
	InClear []string
	// InClearWhat says, for each path of InClear, what is there: "a URL
	// with credentials" for user information, else the detector's phrase
	// (it never quotes the secret).
	InClearWhat map[string]string
}

// SealSpec reads every secret the spec in data references (SecretSource
// values and files, the CA set in spec.controlPlane.pki.dir, registry and
// mirror client keys with their certificates, the content of files whose
// mode is owner-only), seals them to opts.Recipients and rewrites the spec
// as the package comment describes, keeping the document's comments and
// order. The spec must be valid and not sealed already, and hold a secret
// (a *spec.InvalidSpecError otherwise), and
// the rewritten spec is loaded again to prove it still is. A bad recipient
// or machine name is an *OptionError, returned before anything is read. A
// secret file that cannot be read is an error naming its field.
func SealSpec(data []byte, opts SealOptions) (*Sealed, error) {
	if _, sealed, err := seal.Split(data); err != nil {
		return nil, invalidSpec(err.Error())
	} else if sealed != nil {
		return nil, invalidSpec("the spec is already sealed (it holds a SealedSecrets document)")
	}
	loaded, err := spec.Load(data, "spec")
	if err != nil {
		return nil, err
	}
	cfg := loaded.Config
	b := seal.Binding{ClusterName: cfg.Spec.Kubernetes.ClusterName, MachineName: opts.MachineName}
	if b.MachineName == "" {
		b.MachineName = cfg.Spec.Node.Name
	}
	if b.MachineName == "" {
		return nil, &OptionError{Option: "MachineName", Err: errors.New("required: the spec names no node (spec.node.name); give --machine-name NAME, or --machine-name '*' for a template that opens on any machine holding the key")}
	}
	if err := seal.CheckName(b.MachineName); err != nil {
		return nil, &OptionError{Option: "MachineName", Err: err}
	}
	var recipients []seal.Recipient
	for i, s := range opts.Recipients {
		r, err := seal.ParseRecipient(s)
		if err != nil {
			return nil, &OptionError{Option: fmt.Sprintf("Recipients[%d]", i), Err: err}
		}
		recipients = append(recipients, r)
	}
	root := opts.Root
	if root == "" {
		root = "/"
	}
	sr := sealRoot{dir: root, os: machineadm.OSOf(&cfg.Spec)}
	if opts.Files != nil {
		if sr.mem, err = memFiles(sr.os, opts.Files); err != nil {
			return nil, err
		}
	}
	items, edits, err := collect(cfg, sr)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, invalidSpec("the spec references no secret: nothing to seal")
	}
	clear, err := rewrite(data, edits)
	if err != nil {
		return nil, err
	}
	if _, err := spec.Load(clear, "sealed spec"); err != nil {
		return nil, fmt.Errorf("internal error: the rewritten spec does not validate: %w", err)
	}
	// The envelope binds the clear spec as it is written, with the places
	// of the sealed items: an edit of it after sealing does not open.
	if b.SpecDigest, err = seal.SpecDigest(clear); err != nil {
		return nil, fmt.Errorf("internal error: %w", err)
	}
	env, err := seal.Seal(b, items, recipients...)
	if err != nil {
		return nil, err
	}
	envYAML, err := env.Marshal()
	if err != nil {
		return nil, err
	}
	var paths []string
	for p := range items {
		paths = append(paths, p)
	}
	var inClear []string
	what := map[string]string{}
	for _, f := range validation.SecretShapes(cfg) {
		if f.Kind == machineadm.SecretKindFileContent {
			continue // an owner-only file's content is sealed
		}
		if _, dup := what[f.Path]; !dup {
			inClear = append(inClear, f.Path)
		}
		what[f.Path] = f.What
		if f.What == "credentials in the URL" { // user information
			what[f.Path] = "a URL with credentials"
		}
	}
	return &Sealed{File: seal.Join(clear, envYAML), Items: sortStrings(paths), Binding: b, InClear: sortStrings(inClear), InClearWhat: what}, nil
}

// invalidSpec is a whole-document problem of the spec given to SealSpec
// as a *spec.InvalidSpecError (bad input: exit code 2 on the command line).
func invalidSpec(msg string) error {
	return &spec.InvalidSpecError{Source: "spec", Errors: field.ErrorList{
		&field.Error{Type: field.ErrorTypeInvalid, BadValue: field.OmitValueType{}, Detail: msg}}}
}

// edit changes the document at a field path: set a SecretSource file
// reference (file != ""), or delete keys of the mapping at path.
type edit struct {
	path   string
	file   string
	delete []string
}

// collect reads the secrets of cfg, as machineadm.SecretFields finds
// them, into items and lists the spec edits.
func collect(cfg *machineadm.MachineBootstrapConfig, root sealRoot) (map[string][]byte, []edit, error) {
	items := map[string][]byte{}
	var edits []edit
	for _, f := range machineadm.SecretFields(cfg) {
		switch f.Kind {
		case machineadm.SecretKindSource:
			switch {
			case f.Source.Value != "":
				items[f.Path] = []byte(f.Source.Value)
				edits = append(edits, edit{path: f.Path, file: SealedFileDir + "/" + f.Path})
			case f.Source.File != "":
				v, err := root.readSecret(f.Source.File)
				if err != nil {
					return nil, nil, fmt.Errorf("%s.file: %w", f.Path, err)
				}
				t := validation.TrimSecret(f.Format, string(v))
				// The file's content is checked as the machine checks it
				// (empty, then inputs-check's validation.SecretShapeProblem),
				// so that a wrong file is found here, not at boot. Its
				// content is never quoted.
				msg := "is empty"
				if t != "" {
					msg = validation.SecretShapeProblem(f.Format, t)
				}
				if msg != "" {
					return nil, nil, errclass.New(errclass.PayloadUnavailable, "Write the secret alone into the file that field names.",
						fmt.Errorf("%s.file: %s: %s", f.Path, f.Source.File, msg))
				}
				items[f.Path] = []byte(t)
			}
		case machineadm.SecretKindPEMKey:
			items[f.Path] = []byte(*f.Value)
			parent, name := cut(f.Path)
			e := edit{path: parent, delete: []string{name}}
			if f.Cert != nil && *f.Cert != "" {
				items[f.CertPath] = []byte(*f.Cert)
				_, certName := cut(f.CertPath)
				e.delete = append(e.delete, certName)
			}
			edits = append(edits, e)
		case machineadm.SecretKindFileContent:
			raw, err := machineadm.DecodeContent(*f.Value, f.File.Encoding)
			if err == nil && len(raw) > seal.MaxPlaintextBytes {
				err = fmt.Errorf("decoded content larger than %d bytes", seal.MaxPlaintextBytes)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", f.Path, err)
			}
			items[f.Path] = raw
			parent, _ := cut(f.Path)
			edits = append(edits, edit{path: parent, delete: []string{"content", "encoding"}})
		case machineadm.SecretKindCADir:
			bundle, err := readCADir(root, *f.Value)
			if err != nil {
				return nil, nil, err
			}
			items[PKIDirItem] = bundle
		}
	}
	return items, edits, nil
}

// readCADir reads the files of the CA set in dir (those of PKIFiles that
// exist; kubeadm generates what is missing on Init) into one bundle.
func readCADir(root sealRoot, dir string) ([]byte, error) {
	files := map[string][]byte{}
	for _, name := range PKIFiles {
		v, err := root.readSecret(path.Join(filepath.ToSlash(dir), filepath.ToSlash(name)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", PKIDirItem, name, err)
		}
		files[filepath.ToSlash(name)] = v
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: %s holds none of %s", PKIDirItem, dir, strings.Join(PKIFiles, ", "))
	}
	return encodeBundle(files)
}

// readSecret reads the secret file at machine path p under the root
// (sealRoot.resolve). The path is resolved inside the root as the
// machine will see it (files.Resolve): an absolute symbolic link restarts
// at the root and ".." never climbs above it, so that `seal --root IMAGE`
// of an image whose /etc/machineadm/secrets/token links to
// /root/.ssh/id_ed25519 reads the image's file, never the sealing host's.
// filepath.Join followed such a link out of the root.
func (m sealRoot) readSecret(p string) ([]byte, error) {
	if m.mem != nil {
		return m.readMem(p)
	}
	hp, err := m.resolve(p)
	if err != nil {
		return nil, err
	}
	return redact.ReadSecretFile(hp)
}

// cut splits "a.b[1].c" into "a.b[1]" and "c".
func cut(p string) (string, string) {
	i := strings.LastIndex(p, ".")
	return p[:i], p[i+1:]
}

// rewrite applies edits to the YAML document, keeping comments and order.
func rewrite(data []byte, edits []edit) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 {
		return nil, errors.New("not a single YAML document")
	}
	for _, e := range edits {
		n, err := nodeAt(doc.Content[0], e.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.path, err)
		}
		if e.file != "" {
			*n = yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Value: "file"}, {Kind: yaml.ScalarNode, Value: e.file},
			}}
			continue
		}
		for _, key := range e.delete {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					n.Content = append(n.Content[:i], n.Content[i+2:]...)
					break
				}
			}
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	enc.Close()
	return b.Bytes(), nil
}

// nodeAt finds the node at a field path such as
// "spec.host.containerd.registries[0].mirrors[1]".
func nodeAt(n *yaml.Node, p string) (*yaml.Node, error) {
	for _, seg := range strings.Split(p, ".") {
		name, idx, _ := strings.Cut(seg, "[")
		n = mapValue(n, name)
		if n == nil {
			return nil, fmt.Errorf("no field %q", name)
		}
		for idx != "" {
			var num string
			num, idx, _ = strings.Cut(idx, "]")
			idx = strings.TrimPrefix(idx, "[")
			i, err := strconv.Atoi(num)
			if err != nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return nil, fmt.Errorf("no element %s of %q", num, name)
			}
			n = n.Content[i]
		}
	}
	return n, nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
