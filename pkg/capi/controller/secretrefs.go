package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	mspec "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// A MachineadmConfig refers to Secrets in its namespace for what must not
// travel in the config itself: file contents (spec.host.files[].contentFrom),
// registry and mirror client certificates
// (spec.host.containerd.registries[].clientCertificateFrom, also under
// mirrors[]) and the external etcd's client certificate
// (spec.controlPlane.etcd.external.clientCertificateFrom). The controller
// reads them on each render and puts the values into the machine spec
// inline, where the sealer (pkg/seal/sealspec) takes every one of them out
// into the sealed envelope: owner-only file contents and client keys are
// what sealspec seals. The data Secret never holds them readable; the leak
// check is given their values.

// Keys of a TLS Secret (kubernetes.io/tls, as cert-manager writes it).
const (
	tlsCACrt = "ca.crt"
)

// Default places and Secret of an external etcd's TLS files: kubeadm's
// own file names, and Cluster API's Secret name for the API server's etcd
// client certificate (sigs.k8s.io/cluster-api/util/secret
// APIServerEtcdClient).
const (
	defaultEtcdCAFile   = "/etc/kubernetes/pki/etcd/ca.crt"
	defaultEtcdCertFile = "/etc/kubernetes/pki/apiserver-etcd-client.crt"
	defaultEtcdKeyFile  = "/etc/kubernetes/pki/apiserver-etcd-client.key"
	etcdClientSuffix    = "apiserver-etcd-client"
	etcdCASuffix        = "etcd"
)

// defaultSecretFileMode is the mode of a file whose content comes from a
// Secret when the config gives none: owner-only, so that it is sealed.
const defaultSecretFileMode = "0600"

// MissingSecretError says a Secret the config refers to, or one of its
// keys, does not exist. It is reported as the condition MissingSecret
// naming namespace/name, the key and the referring field; no data Secret
// is written until it appears.
type MissingSecretError struct {
	// Namespace and Name identify the Secret.
	Namespace, Name string
	// Key is the missing key; "" when the Secret itself is missing.
	Key string
	// Field is the config's field path that refers to it.
	Field string
	// Reason, when set, says why a present key is unusable.
	Reason string
}

func (e *MissingSecretError) Error() string {
	switch {
	case e.Reason != "":
		return fmt.Sprintf("Secret %s/%s key %q %s (%s)", e.Namespace, e.Name, e.Key, e.Reason, e.Field)
	case e.Key != "":
		return fmt.Sprintf("Secret %s/%s has no key %q (%s)", e.Namespace, e.Name, e.Key, e.Field)
	}
	return fmt.Sprintf("Secret %s/%s not found (%s)", e.Namespace, e.Name, e.Field)
}

// tlsValues are a client certificate, its key and an optional CA bundle.
type tlsValues struct{ cert, key, ca []byte }

// refValues are the values of the Secrets one config refers to.
type refValues struct {
	// files maps a spec.host.files index to its content.
	files map[int][]byte
	// registries maps a registry index, and mirrors a registry and mirror
	// index, to a client certificate.
	registries map[int]tlsValues
	mirrors    map[[2]int]tlsValues
	// etcd is the external etcd's client certificate and CA.
	etcd *tlsValues
	// domainPassword and offlineJoinBlob are the domain join's secret
	// (one of them, when spec.host.domainJoin is set).
	domainPassword, offlineJoinBlob []byte
	// apiServer maps the machine spec path of each Secret reference of
	// the API server's typed settings (apiServerSecrets) to its value.
	apiServer map[string][]byte
	// known are the secret values among them (file contents, keys), for
	// the leak check.
	known [][]byte
}

// secretReader reads Secrets of one namespace, each at most once per
// render.
type secretReader struct {
	ctx   context.Context
	c     client.Client
	ns    string
	cache map[string]*corev1.Secret
	// total is the size of the values read so far.
	total int
}

func (r *secretReader) get(name, field string) (*corev1.Secret, error) {
	if s, ok := r.cache[name]; ok {
		return s, nil
	}
	s := &corev1.Secret{}
	if err := r.c.Get(r.ctx, client.ObjectKey{Namespace: r.ns, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &MissingSecretError{Namespace: r.ns, Name: name, Field: field}
		}
		return nil, err
	}
	r.cache[name] = s
	return s, nil
}

func (r *secretReader) key(name, key, field string) ([]byte, error) {
	s, err := r.get(name, field)
	if err != nil {
		return nil, err
	}
	v, ok := s.Data[key]
	if !ok {
		return nil, &MissingSecretError{Namespace: r.ns, Name: name, Key: key, Field: field}
	}
	switch {
	case len(v) > MaxSecretValueBytes:
		return nil, &MissingSecretError{Namespace: r.ns, Name: name, Key: key, Field: field,
			Reason: fmt.Sprintf("is %d bytes, more than the limit of %d (bootstrap data is user data: 16 to 64 KiB on most clouds)", len(v), MaxSecretValueBytes)}
	case r.total+len(v) > MaxSecretValueBytes:
		return nil, &MissingSecretError{Namespace: r.ns, Name: name, Key: key, Field: field,
			Reason: fmt.Sprintf("brings the values read from Secrets to %d bytes, more than the limit of %d for all of them (bootstrap data is user data: 16 to 64 KiB on most clouds)", r.total+len(v), MaxSecretValueBytes)}
	}
	r.total += len(v)
	return v, nil
}

// nonBlankKey is key for a value the machine uses with the white space
// around it dropped (a password, a blob): one that is nothing else is
// MissingSecret naming field, not a machine spec without the value.
func (r *secretReader) nonBlankKey(name, key, field string) ([]byte, error) {
	v, err := r.key(name, key, field)
	if err == nil && len(bytes.TrimSpace(v)) == 0 {
		return nil, &MissingSecretError{Namespace: r.ns, Name: name, Key: key, Field: field, Reason: "is empty or only white space"}
	}
	return v, err
}

// offlineJoinBlobRE is the text of an offline domain join blob, as the
// machine spec's validation takes it: base64 and white space.
var offlineJoinBlobRE = regexp.MustCompile(`^[A-Za-z0-9+/=\s]+$`)

// MaxSecretValueBytes bounds the values read from the Secrets one config
// refers to, each and all together (128 KiB). More is MissingSecret
// before anything is made: no cloud takes such user data, and the data
// Secret (at most 1 MiB) would not hold it sealed.
const MaxSecretValueBytes = 128 << 10

// tls reads tls.crt, tls.key and, when present, ca.crt of a Secret and
// checks them as kubeadm and containerd will use them: tls.crt only
// certificates, tls.key exactly one private key, the key that of the first
// certificate, ca.crt only certificates, and nothing but white space
// around the PEM blocks (whatever else a value holds would travel with the
// certificates, which are not sealed). Reasons never quote the values.
func (r *secretReader) tls(name, field string) (tlsValues, error) {
	var t tlsValues
	var err error
	if t.cert, err = r.key(name, tlsCrt, field); err != nil {
		return t, err
	}
	if t.key, err = r.key(name, tlsKey, field); err != nil {
		return t, err
	}
	bad := func(key, reason string) error {
		return &MissingSecretError{Namespace: r.ns, Name: name, Key: key, Field: field, Reason: reason}
	}
	if reason := pemOnly(t.cert, "CERTIFICATE", "a PEM certificate"); reason != "" {
		return t, bad(tlsCrt, reason)
	}
	if reason := pemOnly(t.key, "PRIVATE KEY", "a PEM private key"); reason != "" {
		return t, bad(tlsKey, reason)
	}
	if keys, _ := pemBlocks(t.key); len(keys) != 1 {
		return t, bad(tlsKey, fmt.Sprintf("holds %d private keys, want one", len(keys)))
	}
	if _, err := tls.X509KeyPair(t.cert, t.key); err != nil {
		return t, bad(tlsKey, "is not the private key of the first certificate in "+tlsCrt+" ("+err.Error()+")")
	}
	s, _ := r.get(name, field)
	if ca, ok := s.Data[tlsCACrt]; ok && len(bytes.TrimSpace(ca)) > 0 {
		if ca, err = r.key(name, tlsCACrt, field); err != nil {
			return t, err
		}
		if reason := pemOnly(ca, "CERTIFICATE", "a PEM certificate"); reason != "" {
			return t, bad(tlsCACrt, reason)
		}
		t.ca = ca
	}
	return t, nil
}

// pemOnly says what is wrong with data as PEM blocks whose type ends in
// kind ("CERTIFICATE"; "PRIVATE KEY" takes "EC PRIVATE KEY" and "RSA
// PRIVATE KEY" too), certificates parsing as X.509, and nothing else but
// white space; "" when nothing is. what names the expected content in the
// reason.
func pemOnly(data []byte, kind, what string) string {
	blocks, whole := pemBlocks(data)
	switch {
	case !whole && (len(blocks) > 0 || bytes.Contains(data, []byte("-----BEGIN "))):
		return "holds text outside its PEM blocks, or a block that does not decode"
	case len(blocks) == 0:
		return "is not " + what
	}
	for _, b := range blocks {
		if !strings.HasSuffix(b.Type, kind) {
			return fmt.Sprintf("holds a PEM %q block, want only %s blocks", b.Type, kind)
		}
		if kind == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				return "holds a certificate that does not parse (" + err.Error() + ")"
			}
		}
	}
	return ""
}

// pemBlocks decodes the PEM blocks at the start of data, one after the
// other; whole says whether they are all of it, with nothing but white
// space around them. (pem.Decode alone skips any text before a block,
// and a block that does not decode.)
func pemBlocks(data []byte) (blocks []*pem.Block, whole bool) {
	begin := []byte("-----BEGIN ")
	for {
		data = bytes.TrimLeft(data, " \t\r\n")
		if len(data) == 0 {
			return blocks, true
		}
		if !bytes.HasPrefix(data, begin) {
			return blocks, false
		}
		b, rest := pem.Decode(data)
		if b == nil || bytes.Count(data[:len(data)-len(rest)], begin) != 1 {
			return blocks, false
		}
		blocks, data = append(blocks, b), rest
	}
}

// readSecretRefs reads every Secret cfg refers to. A missing Secret or key
// is a *MissingSecretError. controlPlane says whether the external etcd
// settings apply (buildSpec refuses spec.controlPlane for workers).
func readSecretRefs(ctx context.Context, c client.Client, cfg *bootstrapv1.MachineadmConfig, cl *clusterv1.Cluster, controlPlane bool) (*refValues, error) {
	r := &secretReader{ctx: ctx, c: c, ns: cfg.Namespace, cache: map[string]*corev1.Secret{}}
	out := &refValues{files: map[int][]byte{}, registries: map[int]tlsValues{}, mirrors: map[[2]int]tlsValues{}}
	for i, f := range cfg.Spec.Host.Files {
		if f.ContentFrom == nil {
			continue
		}
		v, err := r.key(f.ContentFrom.Secret.Name, f.ContentFrom.Secret.Key, fmt.Sprintf("spec.host.files[%d].contentFrom.secret", i))
		if err != nil {
			return nil, err
		}
		out.files[i] = v
		out.known = append(out.known, v)
	}
	if cd := cfg.Spec.Host.Containerd; cd != nil {
		for i, reg := range cd.Registries {
			p := fmt.Sprintf("spec.host.containerd.registries[%d]", i)
			if reg.ClientCertificateFrom != nil {
				t, err := r.tls(reg.ClientCertificateFrom.Secret.Name, p+".clientCertificateFrom.secret")
				if err != nil {
					return nil, err
				}
				out.registries[i] = t
				out.known = append(out.known, t.key)
			}
			for j, m := range reg.Mirrors {
				if m.ClientCertificateFrom == nil {
					continue
				}
				t, err := r.tls(m.ClientCertificateFrom.Secret.Name, fmt.Sprintf("%s.mirrors[%d].clientCertificateFrom.secret", p, j))
				if err != nil {
					return nil, err
				}
				out.mirrors[[2]int{i, j}] = t
				out.known = append(out.known, t.key)
			}
		}
	}
	if dj := cfg.Spec.Host.DomainJoin; dj != nil {
		if c := dj.Credentials; c != nil {
			v, err := r.nonBlankKey(c.PasswordFrom.Secret.Name, c.PasswordFrom.Secret.Key, "spec.host.domainJoin.credentials.passwordFrom.secret")
			if err != nil {
				return nil, err
			}
			out.domainPassword = v
			out.known = append(out.known, v)
		}
		if b := dj.OfflineJoinBlobFrom; b != nil {
			f := "spec.host.domainJoin.offlineJoinBlobFrom.secret"
			v, err := r.nonBlankKey(b.Secret.Name, b.Secret.Key, f)
			if err != nil {
				return nil, err
			}
			if !offlineJoinBlobRE.Match(v) {
				return nil, &MissingSecretError{Namespace: r.ns, Name: b.Secret.Name, Key: b.Secret.Key, Field: f, Reason: "is not the base64 text `djoin /provision /savefile` writes"}
			}
			out.offlineJoinBlob = v
			out.known = append(out.known, v)
		}
	}
	if controlPlane {
		if err := readAPIServerRefs(r, cfg.Spec.ControlPlane, out); err != nil {
			return nil, err
		}
	}
	if x := externalEtcd(cfg); controlPlane && x != nil {
		p := "spec.controlPlane.etcd.external.clientCertificateFrom.secret"
		name := secretName(cl.Name, etcdClientSuffix)
		if x.ClientCertificateFrom != nil {
			name = x.ClientCertificateFrom.Secret.Name
		}
		t, err := r.tls(name, p)
		if err != nil {
			return nil, err
		}
		if t.ca == nil {
			// Cluster API's convention: the etcd CA certificate is the
			// tls.crt of <cluster>-etcd.
			caName, caField := secretName(cl.Name, etcdCASuffix), "spec.controlPlane.etcd.external (the etcd CA: "+tlsCACrt+" of "+name+", else "+tlsCrt+" of this Secret)"
			ca, err := r.key(caName, tlsCrt, caField)
			if err != nil {
				return nil, err
			}
			if reason := pemOnly(ca, "CERTIFICATE", "a PEM certificate"); reason != "" {
				return nil, &MissingSecretError{Namespace: r.ns, Name: caName, Key: tlsCrt, Field: caField, Reason: reason}
			}
			t.ca = ca
		}
		out.etcd = &t
		out.known = append(out.known, t.key)
	}
	return out, nil
}

// externalEtcd is the config's external etcd, nil for a local one.
func externalEtcd(cfg *bootstrapv1.MachineadmConfig) *bootstrapv1.ExternalEtcd {
	if cp := cfg.Spec.ControlPlane; cp != nil && cp.Etcd != nil {
		return cp.Etcd.External
	}
	return nil
}

// stripRefs returns a copy of the host settings without the Secret
// references, which have no machine spec counterpart, and without the
// domain join, which applyRefs maps by hand (domainJoinSpec).
func stripRefs(h bootstrapv1.HostSpec) bootstrapv1.HostSpec {
	h = *h.DeepCopy()
	h.DomainJoin = nil
	for i := range h.Files {
		h.Files[i].ContentFrom = nil
	}
	if cd := h.Containerd; cd != nil {
		for i := range cd.Registries {
			cd.Registries[i].ClientCertificateFrom = nil
			for j := range cd.Registries[i].Mirrors {
				cd.Registries[i].Mirrors[j].ClientCertificateFrom = nil
			}
		}
	}
	return h
}

// applyRefs puts the Secret values into the machine spec's host settings
// (copied from cfg by stripRefs and strictCopy, so indices match), and
// the domain join with its secret (dj, the config's).
func applyRefs(refs *refValues, dj *bootstrapv1.DomainJoin, h *mspec.Host) {
	if refs == nil {
		return
	}
	h.DomainJoin = domainJoinSpec(dj, refs)
	for i, v := range refs.files {
		f := &h.Files[i]
		// base64 carries any bytes; the sealer decodes it into the item.
		f.Content = base64.StdEncoding.EncodeToString(v)
		f.Encoding = "base64"
		if f.Mode == "" {
			f.Mode = defaultSecretFileMode
		}
	}
	if h.Containerd == nil {
		return
	}
	for i, t := range refs.registries {
		reg := &h.Containerd.Registries[i]
		reg.ClientCert, reg.ClientKey = string(t.cert), string(t.key)
		if reg.CACert == "" && t.ca != nil {
			reg.CACert = string(t.ca)
		}
	}
	for ij, t := range refs.mirrors {
		m := &h.Containerd.Registries[ij[0]].Mirrors[ij[1]]
		m.ClientCert, m.ClientKey = string(t.cert), string(t.key)
		if m.CACert == "" && t.ca != nil {
			m.CACert = string(t.ca)
		}
	}
}

// externalEtcdSpec maps the config's external etcd onto the machine spec:
// the endpoints and file paths, and three host files carrying the CA, the
// certificate and (owner-only, so sealed) the key.
func externalEtcdSpec(x *bootstrapv1.ExternalEtcd, t *tlsValues) (*mspec.ExternalEtcd, []mspec.File) {
	out := &mspec.ExternalEtcd{
		Endpoints: append([]string(nil), x.Endpoints...),
		CAFile:    orDefault(x.CAFile, defaultEtcdCAFile),
		CertFile:  orDefault(x.CertFile, defaultEtcdCertFile),
		KeyFile:   orDefault(x.KeyFile, defaultEtcdKeyFile),
	}
	// Certificates are not secret: they stay readable in the clear spec.
	files := []mspec.File{
		{Path: out.CAFile, Content: string(t.ca), Mode: "0644"},
		{Path: out.CertFile, Content: string(t.cert), Mode: "0644"},
		{Path: out.KeyFile, Content: base64.StdEncoding.EncodeToString(t.key), Encoding: "base64", Mode: "0600"},
	}
	return out, files
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// externalEtcdCerts are the external etcd's files as kubeadm's
// upload-certs names them in kube-system/kubeadm-certs
// (k8s.io/kubernetes/cmd/kubeadm/app/phases/copycerts: externalEtcdCA,
// externalEtcdCert, externalEtcdKey): a control-plane node joining a
// cluster with an external etcd downloads them from there.
func externalEtcdCerts(t *tlsValues) map[string][]byte {
	if t == nil {
		return nil
	}
	return map[string][]byte{"external-etcd-ca.crt": t.ca, "external-etcd.crt": t.cert, "external-etcd.key": t.key}
}

// domainJoinSpec maps the config's domain join onto the machine spec,
// the password or offline join blob inline, where the sealer takes it
// out into the envelope (both are SecretSource fields it seals). White
// space around the value (a Secret made from a file ends in a newline) is
// dropped, as the machine drops it when it opens the envelope.
func domainJoinSpec(dj *bootstrapv1.DomainJoin, refs *refValues) *mspec.DomainJoin {
	if dj == nil {
		return nil
	}
	out := &mspec.DomainJoin{Domain: dj.Domain, OrganizationalUnit: dj.OrganizationalUnit, DomainController: dj.DomainController}
	if dj.Credentials != nil {
		out.Credentials = &mspec.DomainCredentials{Username: dj.Credentials.Username, Password: mspec.SecretSource{Value: strings.TrimSpace(string(refs.domainPassword))}}
	}
	if dj.OfflineJoinBlobFrom != nil {
		out.OfflineJoinBlob = &mspec.SecretSource{Value: strings.TrimSpace(string(refs.offlineJoinBlob))}
	}
	if l := dj.Linux; l != nil {
		out.Linux = &mspec.LinuxDomainJoin{Keytab: l.Keytab, WriteKrb5Conf: l.WriteKrb5Conf, WriteSSSDConf: l.WriteSSSDConf}
	}
	return out
}
