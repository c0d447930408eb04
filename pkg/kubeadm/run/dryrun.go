package run

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	tokenjws "k8s.io/cluster-bootstrap/token/jws"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/apiclient"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"
)

// A dry run of a kubeadm phase writes into one flat directory (kubeadm's
// KUBEADM_*_DRYRUN_DIR) and prints every API object it would create,
// whole. For a person, dryRunPlan turns that into a few lines: the host
// files the real run would write (mapped back to where kubeadm writes them
// on a host), the API objects it would create, patch or delete, by kind and
// name, and kubeadm's own "Would ..." statements. Object contents are never
// part of the plan (a Secret's data stays out of it).

// dirSnapshot maps a file below a directory, by slash-separated relative
// name, to the SHA-256 of its content.
type dirSnapshot map[string][32]byte

// snapshot reads every regular file below dir; a missing dir is empty.
func snapshot(dir string) dirSnapshot {
	s := dirSnapshot{}
	if dir == "" {
		return s
	}
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		s[filepath.ToSlash(rel)] = sha256.Sum256(data)
		return nil
	})
	return s
}

// changed returns the files of after that are new or differ from before,
// sorted.
func (after dirSnapshot) changed(before dirSnapshot) []string {
	var out []string
	for name, sum := range after {
		if old, ok := before[name]; !ok || old != sum {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// isCertMaterial says whether a file kubeadm wrote to its dry-run
// directory belongs in the certificates directory: certificates, keys and
// the service-account key pair, and everything below etcd/.
func isCertMaterial(name string) bool {
	if strings.HasPrefix(name, "etcd/") {
		return true
	}
	ext := filepath.Ext(name)
	return !strings.Contains(name, "/") && (ext == ".crt" || ext == ".key" || ext == ".pub")
}

// kubeletFiles are the files kubeadm writes into the kubelet's directory
// (kubeadm constants: KubeletConfigurationFileName, KubeletEnvFileName,
// KubeletInstanceConfigurationFileName).
var kubeletFiles = []string{
	kubeadmconstants.KubeletConfigurationFileName,
	kubeadmconstants.KubeletEnvFileName,
	kubeadmconstants.KubeletInstanceConfigurationFileName,
}

// hostPath is where a real run writes the file that a dry run wrote as
// name in its directory: certificates below certsDir, kubeconfig files in
// /etc/kubernetes, static pod manifests in /etc/kubernetes/manifests, the
// kubelet's files in /var/lib/kubelet; "" for anything else.
func hostPath(name, certsDir string) string {
	switch {
	case isCertMaterial(name):
		return filepath.Join(certsDir, filepath.FromSlash(name))
	case strings.Contains(name, "/"):
		return ""
	case filepath.Ext(name) == ".conf":
		return filepath.Join(kubeadmconstants.KubernetesDir, name)
	case slices.Contains(kubeletFiles, name):
		return filepath.Join(kubeadmconstants.KubeletRunDirectory, name)
	case strings.HasSuffix(name, ".yaml"):
		// etcd.yaml, kube-apiserver.yaml, kube-controller-manager.yaml,
		// kube-scheduler.yaml: the static pod manifests.
		return filepath.Join(kubeadmconstants.GetStaticPodDirectory(), name)
	}
	return ""
}

// syncCertificates copies the certificate material kubeadm wrote to its
// dry-run directory (files) into certsDir, where the dry run's manifests
// and kubeconfig files point, so that the paths they name exist. A file
// already in certsDir is kept: kubeadm copies the CAs it finds there into
// its directory, and a real run uses the existing file. It returns the
// names it copied: the files a real run would create.
func syncCertificates(dryRunDir, certsDir string, files []string) ([]string, error) {
	var copied []string
	for _, name := range files {
		if !isCertMaterial(name) {
			continue
		}
		dst := filepath.Join(certsDir, filepath.FromSlash(name))
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dryRunDir, filepath.FromSlash(name)))
		if err != nil {
			return copied, err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return copied, err
		}
		mode := fs.FileMode(0o644)
		if filepath.Ext(name) == ".key" {
			mode = 0o600
		}
		if err := os.WriteFile(dst, data, mode); err != nil {
			return copied, err
		}
		copied = append(copied, name)
	}
	return copied, nil
}

var (
	// kubeadm's fake client (util/apiclient/dryrun.go) announces each
	// request, then either the object's name or the whole object.
	dryRunAction = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\[dryrun\] Would perform action (\w+) on resource "([^"]+)"`)
	})
	dryRunResource = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\[dryrun\] Resource name "([^"]*)", namespace "([^"]*)"`)
	})
	// kubeadm's own dry-run statements: "[etcd] Would ensure that ...".
	dryRunWould = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\[[\w-]+\] (Would .*)$`) })
	// A preflight warning: "\t[WARNING Hostname]: hostname ...".
	preflightWarning = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[WARNING ([^\]]+)\]: (.*)$`) })
)

// mutating are the API verbs that change the cluster.
var mutating = []string{"CREATE", "UPDATE", "PATCH", "DELETE"}

// apiPlan reads kubeadm's dry-run output and returns one line per API
// request that would change the cluster ("would create ConfigMap
// kube-system/kubeadm-config"), and kubeadm's own "Would ..." statements,
// in order, without repeats. Object bodies are skipped: only the kind and
// the metadata name and namespace of an attached object are read.
func apiPlan(lines []string) []string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	verb, resource := "", ""
	inObject, inMeta := false, false
	kind, name, ns := "", "", ""
	flush := func() {
		if verb != "" && (name != "" || kind != "") {
			what := resource
			if kind != "" {
				what = kind
			}
			add(fmt.Sprintf("would %s %s %s", strings.ToLower(verb), what, qualified(ns, name)))
		}
		verb, resource, kind, name, ns = "", "", "", "", ""
		inObject, inMeta = false, false
	}
	for _, l := range lines {
		if m := dryRunAction().FindStringSubmatch(l); m != nil {
			flush()
			if slices.Contains(mutating, m[1]) {
				verb, resource = m[1], m[2]
			}
			continue
		}
		if verb == "" {
			if m := dryRunWould().FindStringSubmatch(l); m != nil && !strings.HasPrefix(l, "[dryrun] Would write file") {
				add(lowerFirst(m[1]))
			}
			continue
		}
		switch {
		case dryRunResource().MatchString(l):
			m := dryRunResource().FindStringSubmatch(l)
			name, ns = m[1], m[2]
		case l == "[dryrun] Attached object:":
			inObject = true
		case inObject && strings.HasPrefix(l, "kind: "):
			kind, inMeta = strings.TrimSpace(strings.TrimPrefix(l, "kind: ")), false
		case inObject && l == "metadata:":
			inMeta = true
		case inObject && inMeta && strings.HasPrefix(l, "  name: "):
			name = strings.Trim(strings.TrimSpace(strings.TrimPrefix(l, "  name: ")), `"'`)
		case inObject && inMeta && strings.HasPrefix(l, "  namespace: "):
			ns = strings.Trim(strings.TrimSpace(strings.TrimPrefix(l, "  namespace: ")), `"'`)
		case inObject && l != "" && l[0] != ' ' && l[0] != '-':
			// Another top-level key (data:, spec:) or kubeadm's next line.
			inMeta = false
			if strings.HasPrefix(l, "[") {
				flush()
				if m := dryRunWould().FindStringSubmatch(l); m != nil && !strings.HasPrefix(l, "[dryrun] Would write file") {
					add(lowerFirst(m[1]))
				}
			}
		}
	}
	flush()
	return out
}

// qualified is "namespace/name", or name for a cluster-scoped object.
func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// PreflightWarnings returns kubeadm's preflight warnings in output lines,
// as "Name: message".
func PreflightWarnings(lines []string) []string {
	var out []string
	for _, l := range lines {
		if m := preflightWarning().FindStringSubmatch(l); m != nil {
			out = append(out, m[1]+": "+m[2])
		}
	}
	return out
}

// joinDoneStart and joinDoneEnd bound kubeadm join's closing message
// ("This node has joined the cluster: ... Run 'kubectl get nodes' ...",
// printed by cmd/join.go after the phases ran), which kubeadm prints after
// every phase that machineadm runs as a whole `kubeadm join` with the
// others skipped, and in a dry run too, where nothing joined.
const (
	joinDoneStart = "This node has joined the cluster"
	joinDoneEnd   = "Run 'kubectl get nodes'"
)

// joinDoneFilter returns a line filter that drops kubeadm join's closing
// message: keep(line) is false from its first line through its last.
func joinDoneFilter() func(line string) bool {
	in := false
	return func(line string) bool {
		switch {
		case strings.HasPrefix(line, joinDoneStart):
			in = true
			return false
		case in && strings.HasPrefix(line, joinDoneEnd):
			in = false
			return false
		}
		return !in
	}
}

// filePlan is the plan lines for the dry-run files a phase wrote: a
// "would write" line for each host path. With synced (the certificates
// were copied to the run's certificates directory) a certificate is listed
// only when it was copied, new to that directory.
func filePlan(changed, copied []string, certsDir string, synced bool) []string {
	var out []string
	for _, name := range changed {
		if synced && isCertMaterial(name) && !slices.Contains(copied, name) {
			continue
		}
		if p := hostPath(name, certsDir); p != "" {
			out = append(out, "would write "+p)
		}
	}
	return out
}

// ClusterInfoStandIn is a join dry run's stand-in for the cluster's
// token discovery: an HTTPS server on a loopback port that answers a GET
// of the cluster-info ConfigMap (namespace kube-public) with one made for
// the spec — its kubeconfig naming the spec's endpoint and a cluster CA,
// signed for the spec's token as the controller-manager's bootstrap
// signer would sign it — and every other request with 404 Not Found.
//
// kubeadm's dry run asks the discovery endpoint of its configuration first
// and falls back to its own stand-in only when that fails; its own is made
// for one token (ID "abcdef", kubeadm's dry-run token) and one CA, and
// kubeadm replaces the spec's token and pins with those when the token ID
// differs. Pointed at this server instead (translate.Inputs.DryRunDiscovery),
// kubeadm's own discovery checks the spec's token and pins, whatever the
// token's ID: the signature verifies with the token, and the pins are
// checked against the CA the stand-in carries.
type ClusterInfoStandIn struct {
	// Endpoint is the "127.0.0.1:port" the stand-in serves on.
	Endpoint string
	// CACertHash is the pin ("sha256:<hex>") of the CA the stand-in's
	// cluster-info carries.
	CACertHash string
	// MadeCA says the CA was made for the dry run because the spec
	// carries no cluster CA (a worker; a control-plane join without
	// spec.controlPlane.pki.dir): the pins can then be checked for their
	// form only, and the dry run adds CACertHash to them (see
	// translate.Inputs.DryRunDiscovery).
	MadeCA bool

	srv *http.Server
	// spec is StandInOptions.Endpoint.
	spec string
}

// RestoreEndpoint rewrites, in every kubeconfig file directly in dir (a
// dry run's kubeadm directory: bootstrap-kubelet.conf, admin.conf, …),
// the stand-in's server URL ("https://" + Endpoint) to the spec's
// endpoint, so that the files the dry run shows name the cluster a real
// run joins. Files are rewritten in place with their mode; a file that
// does not name the stand-in is left alone. Nil-safe.
func (s *ClusterInfoStandIn) RestoreEndpoint(dir string) error {
	if s == nil || s.spec == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	from, to := []byte("server: https://"+s.Endpoint+"\n"), []byte("server: https://"+s.spec+"\n")
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".conf") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, from) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, bytes.ReplaceAll(b, from, to), info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// StandInOptions say what a ClusterInfoStandIn stands in for.
type StandInOptions struct {
	// Token is the bootstrap token ("[a-z0-9]{6}.[a-z0-9]{16}") the
	// cluster-info is signed for (spec.join.token). Secret: never part of
	// an error.
	Token string
	// Endpoint is the spec's API server endpoint ("host:port",
	// spec.join.apiServerEndpoint), never contacted.
	Endpoint string
	// CAPEM is the cluster CA certificate (PEM), and CAKeyPEM its key, when
	// the spec carries them (spec.controlPlane.pki.dir); empty: a CA is
	// made for the dry run (MadeCA). With the key, the stand-in's serving
	// certificate is the CA's, so that clients that verify it (a control
	// plane's admin.conf) trust it.
	CAPEM, CAKeyPEM []byte
	// ControlPlane makes the stand-in also answer for the cluster's
	// kubeadm-config (kubeadm's own dry-run ClusterConfiguration, its
	// controlPlaneEndpoint the stand-in's), so that the admin.conf a
	// control-plane join's dry run writes, and with it the discovery of
	// every later phase, points at the stand-in too rather than at
	// kubeadm's own stand-in or a real address.
	//
	// For every join the cluster-info's kubeconfig names the stand-in, not
	// Endpoint: kubeadm's dry-run client sends its reads (kubeadm-config,
	// the kubelet configuration, the Node) to the server the discovered
	// kubeconfig names before it falls back to its own answers, and a
	// dry run contacts no cluster. RestoreEndpoint puts Endpoint back in
	// the kubeconfigs the dry run wrote.
	ControlPlane bool
}

// StartClusterInfoStandIn starts a ClusterInfoStandIn as o says. It answers
// on 127.0.0.1 until Close. Errors: a malformed token (the error does not
// contain it), an unreadable CA, or a loopback address that cannot be
// listened on or reached (the loopback interface down).
func StartClusterInfoStandIn(o StandInOptions) (*ClusterInfoStandIn, error) {
	s := &ClusterInfoStandIn{}
	caPEM, signer := o.CAPEM, crypto.Signer(nil)
	if len(caPEM) == 0 {
		var err error
		if caPEM, signer, err = dryRunCA(); err != nil {
			return nil, err
		}
		s.MadeCA = true
	} else if len(o.CAKeyPEM) > 0 {
		k, err := keyutil.ParsePrivateKeyPEM(o.CAKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("the cluster CA key for the join dry run's stand-in cluster-info: %w", err)
		}
		var ok bool
		if signer, ok = k.(crypto.Signer); !ok {
			return nil, fmt.Errorf("the cluster CA key for the join dry run's stand-in cluster-info: %T cannot sign", k)
		}
	}
	cas, err := certutil.ParseCertsPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("the cluster CA for the join dry run's stand-in cluster-info: %w", err)
	}
	s.CACertHash = pubkeypin.Hash(cas[0])
	var caCert *x509.Certificate
	if signer != nil {
		caCert = cas[0]
	}
	cert, err := loopbackServingCert(caCert, signer)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the join dry run's stand-in cluster-info: listening on the loopback interface: %w", err)
	}
	s.Endpoint = l.Addr().String()
	s.spec = o.Endpoint
	cm, err := StandInClusterInfo(o.Token, s.Endpoint, caPEM)
	if err != nil {
		l.Close()
		return nil, err
	}
	objects := map[string]*corev1.ConfigMap{
		"/api/v1/namespaces/" + metav1.NamespacePublic + "/configmaps/" + bootstrapapi.ConfigMapClusterInfo: cm,
	}
	if o.ControlPlane {
		kc, err := standInKubeadmConfig(s.Endpoint)
		if err != nil {
			l.Close()
			return nil, err
		}
		objects["/api/v1/namespaces/"+metav1.NamespaceSystem+"/configmaps/"+kubeadmconstants.KubeadmConfigConfigMap] = kc
	}
	bodies := map[string][]byte{}
	for p, obj := range objects {
		if bodies[p], err = json.Marshal(obj); err != nil {
			l.Close()
			return nil, err
		}
	}
	notFound := []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"not served by the join dry run's stand-in","reason":"NotFound","code":404}`)
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if b, ok := bodies[r.URL.Path]; ok && r.Method == http.MethodGet {
				_, _ = w.Write(b)
				return
			}
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write(notFound)
		}),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = s.srv.ServeTLS(l, "", "") }()
	// kubeadm falls back to its own stand-in when this one cannot be
	// reached: make sure it can (a loopback interface that is down).
	c, err := net.DialTimeout("tcp", s.Endpoint, 5*time.Second)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("the join dry run's stand-in cluster-info at %s cannot be reached (is the loopback interface up?): %w", s.Endpoint, err)
	}
	c.Close()
	return s, nil
}

// standInKubeadmConfig is the kubeadm-config ConfigMap of kubeadm's own
// dry run (its GetKubeadmConfigReactor's) with controlPlaneEndpoint
// endpoint.
func standInKubeadmConfig(endpoint string) (*corev1.ConfigMap, error) {
	dr := apiclient.NewDryRun().WithDefaultMarshalFunction().WithWriter(io.Discard)
	dr.AppendReactor(dr.GetKubeadmConfigReactor())
	cm, err := dr.FakeClient().CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(context.Background(), kubeadmconstants.KubeadmConfigConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubeadm's dry-run kubeadm-config: %w", err)
	}
	cc := cm.Data[kubeadmconstants.ClusterConfigurationKind]
	re := regexp.MustCompile(`(?m)^controlPlaneEndpoint: .*$`)
	if !re.MatchString(cc) {
		return nil, errors.New("kubeadm's dry-run kubeadm-config names no controlPlaneEndpoint")
	}
	cm = cm.DeepCopy()
	cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	cm.Data[kubeadmconstants.ClusterConfigurationKind] = re.ReplaceAllLiteralString(cc, "controlPlaneEndpoint: "+endpoint)
	return cm, nil
}

// Close stops the stand-in. Nil-safe.
func (s *ClusterInfoStandIn) Close() error {
	if s == nil || s.srv == nil {
		return nil
	}
	return s.srv.Close()
}

// StandInClusterInfo returns the cluster-info ConfigMap a cluster at
// endpoint ("host:port") with the CA certificate caPEM serves once its
// bootstrap signer signed it for token: the kubeconfig of one unnamed
// cluster (server "https://"+endpoint, the CA's data), and its detached
// JWS signature under "jws-kubeconfig-<token ID>" (cluster-bootstrap's
// jws, as the signer computes it). The error never contains the token.
func StandInClusterInfo(token, endpoint string, caPEM []byte) (*corev1.ConfigMap, error) {
	t, err := bootstraptokenv1.NewBootstrapTokenString(token)
	if err != nil {
		return nil, errors.New("spec.join.token: not a bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[""] = &clientcmdapi.Cluster{Server: "https://" + endpoint, CertificateAuthorityData: caPEM}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, err
	}
	sig, err := tokenjws.ComputeDetachedSignature(string(data), t.ID, t.Secret)
	if err != nil {
		return nil, errors.New("signing the join dry run's stand-in cluster-info with spec.join.token failed")
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic},
		Data: map[string]string{
			bootstrapapi.KubeConfigKey:                string(data),
			bootstrapapi.JWSSignatureKeyPrefix + t.ID: sig,
		},
	}, nil
}

// dryRunCA returns a self-signed CA certificate (PEM, ECDSA P-256) made
// for a join dry run whose spec carries no cluster CA, and its key.
func dryRunCA() ([]byte, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "machineadm dry-run stand-in CA"}, key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), key, nil
}

// loopbackServingCert returns a serving certificate for 127.0.0.1 (ECDSA
// P-256, valid one day) issued by ca with caKey, or self-signed when ca is
// nil. kubeadm's discovery reads cluster-info without verifying the
// server; a control plane's admin.conf, which the stand-in answers too,
// verifies it with the cluster CA.
func loopbackServingCert(ca *x509.Certificate, caKey crypto.Signer) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "machineadm dry-run stand-in cluster-info"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	issuer, signer := tmpl, crypto.Signer(key)
	if ca != nil && caKey != nil {
		issuer, signer = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, &key.PublicKey, signer)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
