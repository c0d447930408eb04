package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/containerd"
	"github.com/machineadm/machineadm/pkg/kubeadm/pki"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/redact"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
	"github.com/machineadm/machineadm/pkg/spec"
)

// UnsealChecked is what `unseal --check` found: never a secret.
type UnsealChecked struct {
	// By is the recipient that opened the envelope.
	By seal.OpenedBy
	// Binding is what the envelope is sealed for (its clear names).
	Binding seal.Binding
	// NodeName is the node name the envelope was opened for.
	NodeName string
	// Items are the sealed field paths, sorted.
	Items []string
	// Unchecked are the secret files the spec references outside the
	// envelope that are not on this machine, by field path: the machine
	// reads and checks them in inputs-check.
	Unchecked []string
}

// UnsealCheck is `machineadm unseal --check`: it runs on the sealed file
// at path (In for "-") the checks the machine runs before and after it
// opens the envelope, so that its verdict is bootstrap's:
//   - the clear spec is loaded and validated as bootstrap loads it
//     (an invalid spec, a malformed envelope, an item without its place,
//     a configuration kubeadm refuses: exit code 2);
//   - the envelope is opened with identity ("": sealspec.Unseal's
//     default, sealspec.DefaultIdentityFile) for nodeName ("" : the
//     spec's spec.node.name, else this host's name, as the machine
//     chooses it), so an envelope sealed for another node does not open
//     (VerificationFailed, exit code 1);
//   - the opened spec is validated again, and the secrets the kubeadm
//     phases take and the sealed CA set are checked as inputs-check checks
//     them (PayloadUnavailable, exit code 1). A secret file outside the
//     envelope is checked when it exists here, else listed in Unchecked.
//
// Nothing is written and no secret is returned or printed.
func UnsealCheck(in io.Reader, path, identity, nodeName string) (*UnsealChecked, error) {
	// A --node-name that no Node can have is bad input (exit 2), not an
	// envelope that fails to open for it (exit 1).
	if nodeName != "" {
		if errs := k8svalidation.IsDNS1123Subdomain(nodeName); len(errs) > 0 {
			return nil, Usagef("--node-name %+q: not a node name: %s", nodeName, strings.Join(errs, "; "))
		}
	}
	data, err := ReadSpec(in, path)
	if err != nil {
		return nil, err
	}
	l, sealed, _, err := LoadSpecDoc(data, path)
	if err != nil {
		return nil, err
	}
	if sealed == nil {
		return nil, Usagef("%s holds no SealedSecrets document: seal it with 'machineadm seal'", path)
	}
	cfg := l.Config
	if errs := containerd.Validate(cfg.Spec.Host.Containerd); len(errs) > 0 {
		return nil, &spec.InvalidSpecError{Source: path, Errors: errs}
	}
	if _, err := translate.CheckSpec(cfg, path); err != nil {
		return nil, err
	}
	env, err := seal.Parse(sealed)
	if err != nil {
		return nil, err
	}
	if nodeName == "" {
		nodeName = phases.NodeName(cfg)
	}
	specDoc, _, err := SplitSealed(data, path)
	if err != nil {
		return nil, err
	}
	u, err := sealspec.Unseal(cfg, sealed, sealspec.UnsealOptions{IdentityFile: identity, NodeName: nodeName, ClearSpec: specDoc})
	if err != nil {
		return nil, err
	}
	res := &UnsealChecked{By: u.By, Binding: seal.Binding{ClusterName: env.ClusterName, MachineName: env.MachineName}, NodeName: nodeName, Items: slices.Clone(u.Items)}
	// The opened spec, as the machine's phases see it.
	if errs := validation.Validate(cfg).Errors; len(errs) > 0 {
		return nil, errclass.New(errclass.InvalidSpec, "Reseal the spec with values that validate.", openedInvalid(errs))
	}
	inputs, err := translate.SecretInputs(cfg, func(f machineadm.SecretField) (string, error) {
		if f.Source.File == "" {
			return f.Source.Value, nil
		}
		b, err := redact.ReadSecretFile(filepath.Clean(f.Source.File))
		if errors.Is(err, fs.ErrNotExist) {
			res.Unchecked = append(res.Unchecked, f.Path)
			return "", nil
		}
		if err != nil {
			return "", errclass.New(errclass.PayloadUnavailable, "", fmt.Errorf("%s: reading %s: %w", f.Path, f.Source.File, err))
		}
		return strings.TrimSpace(string(b)), nil
	})
	if err != nil {
		return nil, err
	}
	if err := pki.CheckInputs(inputs); err != nil {
		return nil, errclass.New(errclass.PayloadUnavailable, "the sealed secret of that field holds something else; reseal the spec with the secret alone", err)
	}
	if cp := cfg.Spec.ControlPlane; cp != nil && cp.PKI.Dir != "" && len(u.PKIFiles) > 0 {
		if err := pki.CheckCASet(u.PKIFiles, time.Now()); err != nil {
			return nil, errclass.New(errclass.PayloadUnavailable, "reseal the spec with the cluster's CA set from `machineadm pki init`", fmt.Errorf("spec.controlPlane.pki.dir: %w", err))
		}
	}
	for _, v := range u.PKIFiles {
		clear(v)
	}
	return res, nil
}

// openedInvalid describes validation errors of an opened spec by field
// path and type only: their values may be the secrets.
func openedInvalid(errs field.ErrorList) error {
	msg := "the opened spec is invalid:"
	for _, e := range errs {
		msg += fmt.Sprintf(" %s: %s;", e.Field, e.Type)
		if e.Detail != "" {
			msg = msg[:len(msg)-1] + " (" + redactedDetail(e.Detail) + ");"
		}
	}
	return errors.New(msg)
}

// redactedDetail keeps a validation detail only when it quotes nothing.
func redactedDetail(d string) string {
	if slices.ContainsFunc([]rune(d), func(r rune) bool { return r == '"' || r == '\'' }) {
		return "detail withheld"
	}
	return d
}
