package phases

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	"github.com/machineadm/machineadm/pkg/kubeadm/pki"
	"github.com/machineadm/machineadm/pkg/redact"
	"github.com/machineadm/machineadm/pkg/spec"
)

var encryptionPath = field.NewPath("spec", "controlPlane", "apiServer", "encryption")

// DefaultEncryption turns encryption at rest on under a compliance
// profile, with the cluster's key from the CA set: for a control plane
// whose spec has spec.security.profile, no
// spec.controlPlane.apiServer.encryption and no --encryption-provider-config
// in apiServer.extraArgs, it sets encryption to an aescbc provider (the
// key pki.EncryptionKeyFile of the sealed CA set, or of pki.dir under the
// root; failing both, the key this default wrote into the node's
// encryption configuration before, appliedKey) for machineadm.CASetEncryptionResources, with identity as a reader of
// values written before. aescbc: CIS 1.2.28 asks for aescbc, kms or
// secretbox, and AES is the FIPS-approved cipher DISA's STIG needs
// (secretbox's XSalsa20-Poly1305 is not).
//
// The key is put in the spec in memory, as unsealing does, and given to
// the redactor; it is never written but into the API server's encryption
// configuration (0600). Every control plane of a cluster needs the same
// key, so a node never makes one: with no key (no pki.dir, or a CA set
// without encryption.key) it refuses the run with an
// *spec.InvalidSpecError (exit code 2) naming the field and the ways to
// give one, before any phase. A CA set's key other than the one this
// default gave the node before (appliedKey) is refused the same way, as
// is a node whose encryption configuration has other readers (providers
// the spec gave before and no longer gives): the API server would lose
// every Secret encrypted with them. A control plane without a profile
// and without encryption on a node this default configured (a spec that
// dropped spec.security) is refused too. These refusals apply while the
// data is there (clusterDataHere). Call it after OpenSealed.
func DefaultEncryption(d *Data) error {
	if !machineadm.WantsCASetEncryptionKey(d.Config) {
		if !machineadm.ConfiguresNoEncryption(d.Config) {
			return nil
		}
		// No profile and no encryption: a node a profile's default
		// configured would have its API server lose the key, and every
		// Secret it encrypted (a spec that dropped spec.security).
		if key, _ := appliedKey(d); key != "" && clusterDataHere(d) {
			return &spec.InvalidSpecError{Source: "spec", Errors: field.ErrorList{field.Required(encryptionPath, fmt.Sprintf(
				"this node's API server encrypts Secrets with the key a compliance profile's default gave it (%s, key %s); without spec.security.profile the spec turns encryption at rest off and every Secret would become unreadable: "+
					"keep the profile, or give this field (an aescbc provider with the CA set's %s; to leave encryption, identity first and that key second until the Secrets are rewritten)",
				apiserverconfig.EncryptionConfigFile, machineadm.CASetEncryptionKeyName, pki.EncryptionKeyFile))}}
		}
		return nil
	}
	s := &d.Config.Spec
	a := &s.ControlPlane.APIServer
	refuse := func(why string) error {
		return &spec.InvalidSpecError{Source: "spec", Errors: field.ErrorList{field.Required(encryptionPath, fmt.Sprintf(
			"profile %s turns encryption at rest on, and every control plane of the cluster needs the same key: %s. "+
				"Give the CA set from `machineadm pki init` (it holds %s) in spec.controlPlane.pki.dir, "+
				"add a key to an existing CA set with `machineadm pki encryption-key --out DIR/%s`, "+
				"or set this field (a provider with the cluster's key; an identity provider alone to keep Secrets in the clear, which the evidence then reports)",
			s.Security.Profile, why, pki.EncryptionKeyFile, pki.EncryptionKeyFile))}}
	}
	var key []byte
	var missing string
	switch {
	case d.sealedPKI != nil:
		key = d.sealedPKI[pki.EncryptionKeyFile]
		missing = "the sealed CA set (spec.controlPlane.pki.dir) has no " + pki.EncryptionKeyFile
	case s.ControlPlane.PKI.Dir != "":
		file := path.Join(s.ControlPlane.PKI.Dir, pki.EncryptionKeyFile)
		var err error
		key, err = redact.ReadSecretFile(hostPathOrRoot(d, file))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return &spec.InvalidSpecError{Source: "spec", Errors: field.ErrorList{field.Invalid(encryptionPath, field.OmitValueType{}, fmt.Sprintf("reading the CA set's key %s: %v", file, err))}}
		}
		missing = "spec.controlPlane.pki.dir has no " + pki.EncryptionKeyFile + " (" + file + ")"
	default:
		missing = "the spec gives no CA set (spec.controlPlane.pki.dir) to take it from"
	}
	applied, others := appliedKey(d)
	// The refusals below keep the key of data that exists: a node reset
	// for a new cluster (etcd's data gone) has a stale configuration.
	atRisk := clusterDataHere(d)
	if atRisk && len(others) > 0 {
		// The node's API server reads Secrets with providers this
		// default would drop (the spec gave the field before and no
		// longer does): what they encrypted would become unreadable.
		return &spec.InvalidSpecError{Source: "spec", Errors: field.ErrorList{field.Invalid(encryptionPath, field.OmitValueType{}, fmt.Sprintf(
			"this node's API server encrypts with a configuration (%s: %s) the profile's default would replace, making what it encrypted unreadable; "+
				"give this field as the node was bootstrapped with it",
			apiserverconfig.EncryptionConfigFile, strings.Join(others, ", ")))}}
	}
	if key == nil {
		// A node this default configured before (a re-run, an upgrade
		// after the CA set was taken off the node) keeps the key its API
		// server encrypts, and reads, with.
		if applied == "" {
			return refuse(missing)
		}
		key = []byte(applied)
	}
	v := strings.TrimSpace(string(key))
	if atRisk && applied != "" && v != strings.TrimSpace(applied) {
		// Replacing the key the API server encrypts with would leave it
		// unable to read every Secret written so far (identity reads only
		// values in the clear). Rotation is the operator's, in steps.
		return &spec.InvalidSpecError{Source: "spec", Errors: field.ErrorList{field.Invalid(encryptionPath, field.OmitValueType{}, fmt.Sprintf(
			"the CA set's %s is not the key this node's API server encrypts Secrets with (%s, key %s): switching would make every Secret encrypted so far unreadable. "+
				"Give the CA set the cluster's key again, or rotate it yourself in this field (the new key added as a second aescbc key on every control plane, then moved first, then the Secrets rewritten)",
			pki.EncryptionKeyFile, apiserverconfig.EncryptionConfigFile, machineadm.CASetEncryptionKeyName))}}
	}
	if msg := validation.SecretShapeProblem(machineadm.SecretFormatEncryptionKey, v); msg != "" {
		return &spec.InvalidSpecError{Source: "spec", Errors: field.ErrorList{field.Invalid(encryptionPath, field.OmitValueType{}, "the CA set's "+pki.EncryptionKeyFile+" "+msg)}}
	}
	if d.AddSecrets != nil {
		d.AddSecrets(v)
	}
	a.Encryption = machineadm.CASetEncryption(v)
	return nil
}

// clusterDataHere says whether data the node's existing encryption
// configuration may have encrypted can still be read through this node:
// an external etcd, or a local etcd whose data directory
// (spec.controlPlane.etcd.local.dataDir, default DefaultEtcdDataDir)
// holds a member. `kubeadm reset` removes the member, and with it every
// value the old configuration encrypted: a node reset for a new cluster
// may take another key.
func clusterDataHere(d *Data) bool {
	cp := d.Config.Spec.ControlPlane
	if cp.Etcd.External != nil {
		return true
	}
	dir := machineadm.DefaultEtcdDataDir
	if cp.Etcd.Local != nil && cp.Etcd.Local.DataDir != "" {
		dir = cp.Etcd.Local.DataDir
	}
	_, err := os.Lstat(hostPathOrRoot(d, path.Join(dir, "member")))
	return err == nil
}

// appliedKey reads the node's existing encryption configuration
// (apiserverconfig.EncryptionConfigFile under the root): key is the key
// named machineadm.CASetEncryptionKeyName of its aescbc provider, the key
// DefaultEncryption gave this node before, or ""; others names, never
// quoting a secret, each other provider but identity that reads data
// ("aescbc key k1", "kms v2"), which the default's configuration would
// drop. A re-run or an upgrade on a node whose CA set was removed after
// the bootstrap (its private keys need not stay on the node) keeps
// encrypting, and reading, with key. No file, or one that does not
// parse, is neither.
func appliedKey(d *Data) (key string, others []string) {
	data, err := redact.ReadSecretFile(hostPathOrRoot(d, apiserverconfig.EncryptionConfigFile))
	if err != nil {
		return "", nil
	}
	var ec apiserverv1.EncryptionConfiguration
	if err := yaml.Unmarshal(data, &ec); err != nil {
		return "", nil
	}
	seen := map[string]bool{}
	other := func(what string) {
		if !seen[what] {
			seen[what] = true
			others = append(others, what)
		}
	}
	for _, r := range ec.Resources {
		for _, p := range r.Providers {
			switch {
			case p.AESCBC != nil:
				for _, k := range p.AESCBC.Keys {
					if k.Name == machineadm.CASetEncryptionKeyName && key == "" {
						key = k.Secret
						continue
					}
					if k.Name != machineadm.CASetEncryptionKeyName || k.Secret != key {
						other("aescbc key " + k.Name)
					}
				}
			case p.AESGCM != nil:
				for _, k := range p.AESGCM.Keys {
					other("aesgcm key " + k.Name)
				}
			case p.Secretbox != nil:
				for _, k := range p.Secretbox.Keys {
					other("secretbox key " + k.Name)
				}
			case p.KMS != nil:
				other("kms " + p.KMS.Name)
			}
		}
	}
	return key, others
}
