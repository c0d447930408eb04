package controller

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	mspec "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// The controller emits machine specs of version v1alpha1 (buildSpec fills
// mspec, pkg/apis/machineadm/v1alpha1, by name, never the hub): an agent
// of any release reads v1alpha1, and moving the controller to a newer
// version is a decision, not a side effect of a new hub. The provider's
// API (pkg/capi/api/v1alpha1) mirrors that version's node-level fields by
// hand; TestProviderMirrorsMachineSpec checks the mirror both ways.

// absentFromProvider are the machine spec's fields (JSON paths under
// spec) that the provider's MachineadmConfigSpec deliberately lacks, with
// the reason. A path covers the fields under it.
var absentFromProvider = map[string]string{
	"spec.role":                            "the controller derives it from the Machine (control-plane label)",
	"spec.action":                          "the controller decides init or join (its init lock)",
	"spec.kubernetes.version":              "cluster-level: the Machine's spec.version",
	"spec.kubernetes.clusterName":          "cluster-level: the Cluster's name",
	"spec.kubernetes.controlPlaneEndpoint": "cluster-level: the Cluster's spec.controlPlaneEndpoint",
	"spec.kubernetes.networking":           "cluster-level: the Cluster's spec.clusterNetwork",
	"spec.controlPlane.advertiseAddress":   "per machine: kubeadm chooses the default-route address (docs/cluster-api.md)",
	"spec.controlPlane.pki": "the controller delivers Cluster API's CA set, sealed, to a directory of its own (dir) " +
		"under kubeadm's default certificatesDir, /etc/kubernetes/pki (docs/cluster-api.md); encryptionAlgorithm is offered " +
		"one level up (renamedInProvider)",
	"spec.controlPlane.certificateKey":                     "the controller generates the certificate key and seals it",
	"spec.controlPlane.bootstrapTokens":                    "the controller makes a bootstrap token per joining Machine",
	"spec.join":                                            "the controller writes the join: endpoint from the Cluster, its own token, the CA hash of the Cluster's CA",
	"spec.node.name":                                       "per machine: a Linux node takes its host name; a Windows one the Machine's name mapped into 15 characters (WindowsNodeName)",
	"spec.host.domainJoin.credentials.password":            "given as a Secret reference, passwordFrom, and sealed",
	"spec.host.domainJoin.offlineJoinBlob":                 "given as a Secret reference, offlineJoinBlobFrom, and sealed",
	"spec.controlPlane.apiServer.audit.webhook.kubeConfig": "given as a Secret reference, kubeConfigFrom, and sealed",
	"spec.controlPlane.apiServer.encryption.resources[].providers[].aesgcm.keys[].secret":    "given as a Secret reference, secretFrom, and sealed",
	"spec.controlPlane.apiServer.encryption.resources[].providers[].aescbc.keys[].secret":    "given as a Secret reference, secretFrom, and sealed",
	"spec.controlPlane.apiServer.encryption.resources[].providers[].secretbox.keys[].secret": "given as a Secret reference, secretFrom, and sealed",
	"spec.controlPlane.apiServer.authentication.webhook.kubeConfig":                          "given as a Secret reference, kubeConfigFrom, and sealed",
	"spec.controlPlane.apiServer.authorization.authorizers[].webhook.kubeConfig":             "given as a Secret reference, kubeConfigFrom, and sealed",
	"spec.host.containerd.registries[].clientCert":                                           "given as a Secret reference, clientCertificateFrom, and sealed",
	"spec.host.containerd.registries[].clientKey":                                            "given as a Secret reference, clientCertificateFrom, and sealed",
	"spec.host.containerd.registries[].mirrors[].clientCert":                                 "given as a Secret reference, clientCertificateFrom, and sealed",
	"spec.host.containerd.registries[].mirrors[].clientKey":                                  "given as a Secret reference, clientCertificateFrom, and sealed",
}

// providerOnly are MachineadmConfigSpec fields without a machine spec
// field of the same path, with the reason. A path covers the fields under
// it.
var providerOnly = map[string]string{
	"spec.format":                           "a render option (the bootstrap data's format), not part of the machine spec",
	"spec.ignitionVersion":                  "a render option",
	"spec.agent":                            "a render option: where the stub gets the agent",
	"spec.recipients":                       "a sealing option: who may open the bootstrap data's secrets",
	"spec.controlPlane.encryptionAlgorithm": "the machine spec's spec.controlPlane.pki.encryptionAlgorithm (see renamedInProvider)",
	"spec.controlPlane.etcd.external.clientCertificateFrom":                                      "a Secret reference: the controller writes its certificate, key and CA as host files at caFile, certFile and keyFile",
	"spec.host.files[].contentFrom":                                                              "a Secret reference: the controller puts the value in content, sealed",
	"spec.userDataLimit":                                                                         "a render option: over it the spec is served as a payload (R16)",
	"spec.controlPlane.binarySources":                                                            "the controller turns each into a spec.host.files entry (source URL + sha256) at its binary's path",
	"spec.host.domainJoin.credentials.passwordFrom":                                              "a Secret reference: the controller fills password, sealed",
	"spec.host.domainJoin.offlineJoinBlobFrom":                                                   "a Secret reference: the controller fills offlineJoinBlob, sealed",
	"spec.host.containerd.registries[].clientCertificateFrom":                                    "a Secret reference: the controller fills clientCert, clientKey (sealed) and caCert",
	"spec.host.containerd.registries[].mirrors[].clientCertificateFrom":                          "a Secret reference: the controller fills clientCert, clientKey (sealed) and caCert",
	"spec.controlPlane.apiServer.audit.webhook.kubeConfigFrom":                                   "a Secret reference: the controller fills kubeConfig, sealed",
	"spec.controlPlane.apiServer.encryption.resources[].providers[].aesgcm.keys[].secretFrom":    "a Secret reference: the controller fills secret, sealed",
	"spec.controlPlane.apiServer.encryption.resources[].providers[].aescbc.keys[].secretFrom":    "a Secret reference: the controller fills secret, sealed",
	"spec.controlPlane.apiServer.encryption.resources[].providers[].secretbox.keys[].secretFrom": "a Secret reference: the controller fills secret, sealed",
	"spec.controlPlane.apiServer.authentication.webhook.kubeConfigFrom":                          "a Secret reference: the controller fills kubeConfig, sealed",
	"spec.controlPlane.apiServer.authorization.authorizers[].webhook.kubeConfigFrom":             "a Secret reference: the controller fills kubeConfig, sealed",
}

// renamedInProvider maps a provider path to the machine spec path it
// fills, where the two differ (controlPlane in buildSpec).
var renamedInProvider = map[string]string{
	"spec.controlPlane.encryptionAlgorithm": "spec.controlPlane.pki.encryptionAlgorithm",
}

// jsonFields returns every field of t by JSON path under prefix (lists as
// "[]"), each with its JSON shape: "object", "list", "string", "bool",
// "number", "any-object" (free-form JSON) or "map[K]V".
func jsonFields(t reflect.Type, prefix string, out map[string]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && f.Anonymous {
			jsonFields(f.Type, prefix, out)
			continue
		}
		if name == "" {
			name = f.Name
		}
		walkShape(f.Type, prefix+"."+name, out)
	}
}

func walkShape(t reflect.Type, path string, out map[string]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[apiextensionsv1.JSON]() || t == reflect.TypeFor[map[string]any]():
		out[path] = "any-object"
	case t.Kind() == reflect.Struct:
		out[path] = "object"
		jsonFields(t, path, out)
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		out[path] = "list"
		walkShape(t.Elem(), path+"[]", out)
	case t.Kind() == reflect.Map:
		out[path] = "map[" + t.Key().Kind().String() + "]" + t.Elem().Kind().String()
	case t.Kind() == reflect.String:
		out[path] = "string"
	case t.Kind() == reflect.Bool:
		out[path] = "bool"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		out[path] = "number"
	default:
		out[path] = t.Kind().String()
	}
}

// covered reports whether path is a key of list or under one.
func covered(path string, list map[string]string) bool {
	for p := range list {
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[]") {
			return true
		}
	}
	return false
}

// TestProviderMirrorsMachineSpec compares the machine spec v1alpha1 with
// the provider's MachineadmConfigSpec field by field, by JSON path, in both
// directions: every machine spec field is in the provider's API with the
// same shape or on absentFromProvider with a reason, and every provider
// field is a machine spec field or on providerOnly with a reason.
func TestProviderMirrorsMachineSpec(t *testing.T) {
	spec, provider := map[string]string{}, map[string]string{}
	jsonFields(reflect.TypeFor[mspec.MachineBootstrapSpec](), "spec", spec)
	jsonFields(reflect.TypeFor[bootstrapv1.MachineadmConfigSpec](), "spec", provider)
	if len(spec) < 100 || len(provider) < 80 {
		t.Fatalf("the walk found %d machine spec and %d provider fields; it is broken", len(spec), len(provider))
	}
	for _, p := range sortedKeys(spec) {
		if covered(p, absentFromProvider) {
			if _, ok := provider[p]; ok {
				t.Errorf("%s is listed as absent from the provider's API but is there: take it off absentFromProvider", p)
			}
			continue
		}
		shape, ok := provider[p]
		if !ok {
			t.Errorf("machine spec field %s is not in MachineadmConfigSpec (pkg/capi/api/v1alpha1): add it there, or to absentFromProvider with the reason", p)
		} else if shape != spec[p] {
			t.Errorf("%s is %s in the machine spec but %s in MachineadmConfigSpec", p, spec[p], shape)
		}
	}
	for _, p := range sortedKeys(provider) {
		if covered(p, providerOnly) {
			if _, ok := spec[p]; ok {
				t.Errorf("%s is listed as provider-only but the machine spec has it: take it off providerOnly", p)
			}
			continue
		}
		if _, ok := spec[p]; !ok {
			t.Errorf("MachineadmConfigSpec field %s has no machine spec field of that path: map it, or add it to providerOnly with the reason", p)
		}
	}
	for from, to := range renamedInProvider {
		if provider[from] == "" || spec[to] == "" || provider[from] != spec[to] {
			t.Errorf("renamed %s (%q) → %s (%q): both must exist with one shape", from, provider[from], to, spec[to])
		}
	}
	for _, list := range []map[string]string{absentFromProvider, providerOnly} {
		for p, why := range list {
			if why == "" {
				t.Errorf("%s is listed without a reason", p)
			}
			if spec[p] == "" && provider[p] == "" {
				t.Errorf("%s is listed but is a field of neither API: remove it", p)
			}
		}
	}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
