package sealspec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/seal"
)

// UnsealOptions say how a machine opens its sealed secrets.
type UnsealOptions struct {
	// IdentityFile is the identity file (seal.LoadIdentityFile). Default
	// seal.DefaultIdentityFile. Ignored when Identities is set.
	IdentityFile string
	// Identities, when set, are used instead of reading IdentityFile.
	Identities []seal.Identity
	// ClearSpec is the clear spec document the envelope came with, as
	// seal.Split returned it beside the envelope. Required: the envelope
	// opens only when its digest (seal.SpecDigest) is the one sealed, so a
	// clear spec edited after sealing (its node name, an endpoint, a
	// file's path or mode) fails with class VerificationFailed.
	ClearSpec []byte
	// NodeName is this machine's node name (spec.node.name, or the host
	// name as kubeadm chooses it). Required: an envelope sealed for another
	// machine name does not open.
	NodeName string
}

// Unsealed is an opened envelope applied to a spec.
type Unsealed struct {
	// By says which recipient opened the envelope (for the report; no secret).
	By seal.OpenedBy
	// Items are the sealed field paths that were applied, sorted.
	Items []string
	// PKIFiles are the files of the CA set from the envelope's
	// "spec.controlPlane.pki.dir" item, by slash-separated name relative to
	// that directory ("ca.key", "etcd/ca.key"): the PKI phase copies these
	// instead of reading the directory. Secret.
	PKIFiles map[string][]byte
}

// Unseal opens the SealedSecrets document sealed (as seal.Split returned
// it, beside opts.ClearSpec, the document cfg was loaded from) for cfg and puts each secret where cfg expects it, in memory only:
// SecretSources get Value (File cleared), registry and mirror clientKey
// and clientCert, files' Content (Encoding cleared); the CA set is
// returned in PKIFiles. Nothing is written. Errors: a malformed envelope
// is a *seal.ParseError (class InvalidSpec); an item that has no place in
// cfg (a field the spec does not have) is class InvalidSpec; an identity
// file problem or any failure to open is class VerificationFailed, a clear
// spec edited after sealing (seal.ErrSpecMismatch) included.
func Unseal(cfg *machineadm.MachineBootstrapConfig, sealed []byte, opts UnsealOptions) (*Unsealed, error) {
	env, err := seal.Parse(sealed)
	if err != nil {
		return nil, err
	}
	// An item without its place (a field the clear spec lost, a file
	// mode widened) is named as such, before any key is used; any other
	// edit of the clear spec fails to open below.
	paths := make([]string, 0, len(env.Items))
	for p := range env.Items {
		paths = append(paths, p)
	}
	if err := CheckPlaces(cfg, paths); err != nil {
		return nil, err
	}
	ids := opts.Identities
	if ids == nil {
		path := opts.IdentityFile
		if path == "" {
			path = seal.DefaultIdentityFile
		}
		if ids, err = seal.LoadIdentityFile(path); err != nil {
			return nil, err
		}
	}
	if opts.NodeName == "" {
		return nil, errors.New("sealspec.Unseal: NodeName is required")
	}
	if len(opts.ClearSpec) == 0 {
		return nil, errors.New("sealspec.Unseal: ClearSpec is required")
	}
	digest, err := seal.SpecDigest(opts.ClearSpec)
	if err != nil {
		return nil, errclass.New(errclass.InvalidSpec, "Check the spec document of the sealed file.", err)
	}
	opened, err := seal.Open(env, seal.Expect{ClusterName: cfg.Spec.Kubernetes.ClusterName, MachineName: opts.NodeName, SpecDigest: digest}, ids...)
	if err != nil {
		return nil, err
	}
	u, err := Apply(cfg, opened)
	for _, v := range opened.Items {
		clear(v)
	}
	return u, err
}

// Apply puts the items of an opened envelope into cfg (see Unseal), at
// the places machineadm.SecretSlots gives: a SecretSource, a PEM key or
// the certificate beside it, the content of a file whose mode is
// owner-only, the CA directory. It fails, changing nothing, when an item
// has no such place in cfg: a field cfg does not have, or a file whose
// clear mode was widened (the secret would be readable by others).
func Apply(cfg *machineadm.MachineBootstrapConfig, opened *seal.Opened) (*Unsealed, error) {
	places, text := slots(cfg)
	paths := make([]string, 0, len(opened.Items))
	for p := range opened.Items {
		paths = append(paths, p)
	}
	if err := checkPlaces(places, text, paths); err != nil {
		return nil, err
	}
	u := &Unsealed{By: opened.By, PKIFiles: map[string][]byte{}}
	if v, ok := opened.Items[PKIDirItem]; ok {
		files, err := decodeBundle(v)
		if err != nil {
			return nil, errclass.New(errclass.VerificationFailed, "Reseal the spec with `machineadm seal`.", fmt.Errorf("sealed secrets: %s: %w", PKIDirItem, err))
		}
		u.PKIFiles = files
	}
	for p, v := range opened.Items {
		u.Items = append(u.Items, p)
		if set := places[p]; set != nil {
			set(v)
		}
	}
	slices.Sort(u.Items)
	return u, nil
}

// CheckPlaces says, without opening anything, whether every item path of
// a SealedSecrets envelope has its place in cfg, as Apply checks it when
// the machine opens the envelope: a field cfg has, and for a file's
// content an owner-only mode. The item paths are in the clear in the
// envelope, so `config validate`, render and bootstrap refuse such a file
// when they read it. Its errors are Apply's (class InvalidSpec).
func CheckPlaces(cfg *machineadm.MachineBootstrapConfig, itemPaths []string) error {
	places, text := slots(cfg)
	return checkPlaces(places, text, itemPaths)
}

// slots maps each place of cfg that takes a sealed item
// (machineadm.SecretSlots) to the function that puts the item there (nil
// for the CA set, which is returned rather than put into cfg); text lists
// the free-text places, true for a file's content whose mode is not
// owner-only.
func slots(cfg *machineadm.MachineBootstrapConfig) (map[string]func([]byte), map[string]bool) {
	places := map[string]func([]byte){}
	text := map[string]bool{}
	for _, f := range machineadm.SecretSlots(cfg) {
		switch f.Kind {
		case machineadm.SecretKindSource:
			places[f.Path] = func(v []byte) { *f.Source = machineadm.SecretSource{Value: strings.TrimSpace(string(v))} }
		case machineadm.SecretKindPEMKey:
			places[f.Path] = func(v []byte) { *f.Value = string(v) }
			if f.Cert != nil {
				places[f.CertPath] = func(v []byte) { *f.Cert = string(v) }
			}
		case machineadm.SecretKindFileContent:
			places[f.Path] = func(v []byte) { *f.Value, f.File.Encoding = string(v), machineadm.EncodingPlain }
		case machineadm.SecretKindText:
			text[f.Path] = f.File != nil
		case machineadm.SecretKindCADir:
			if *f.Value != "" {
				places[f.Path] = nil // the CA set is returned, not put into cfg
			}
		}
	}
	return places, text
}

// checkPlaces refuses item paths without a place: a file content whose
// mode was widened, or a field the spec does not have.
func checkPlaces(places map[string]func([]byte), text map[string]bool, paths []string) error {
	var unknown, widened []string
	for _, p := range paths {
		if _, ok := places[p]; !ok {
			if text[p] {
				widened = append(widened, p)
			} else {
				unknown = append(unknown, p)
			}
		}
	}
	if len(widened) > 0 {
		slices.Sort(widened)
		return errclass.New(errclass.InvalidSpec, "Give the file an owner-only mode such as \"0600\", as it was sealed.",
			fmt.Errorf("sealed secrets: %s: the file's mode gives group or others access; sealed content goes only to an owner-only file", strings.Join(widened, ", ")))
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return errclass.New(errclass.InvalidSpec, "Reseal the spec: the envelope was sealed for a spec with other fields.",
			fmt.Errorf("sealed secrets: item(s) %s have no place in this spec", strings.Join(unknown, ", ")))
	}
	return nil
}

func sortStrings(s []string) []string {
	slices.Sort(s)
	return s
}

// DefaultIdentityFile is where a machine keeps its identity by default
// (seal.DefaultIdentityFile).
const DefaultIdentityFile = seal.DefaultIdentityFile
