package apiserverconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

func kms(name, endpoint string) machineadm.EncryptionProvider {
	return machineadm.EncryptionProvider{KMS: &machineadm.KMSProvider{APIVersion: "v2", Name: name, Endpoint: endpoint}}
}

// TestVolumesOnePerSocketDirectory: two KMS providers with sockets in one
// directory share a mount; each other directory gets its own; nothing is
// mounted without typed settings.
func TestVolumesOnePerSocketDirectory(t *testing.T) {
	if v := Volumes(&machineadm.APIServer{}); v != nil {
		t.Errorf("volumes without settings: %v", v)
	}
	a := &machineadm.APIServer{Encryption: &machineadm.Encryption{Resources: []machineadm.EncryptionResource{
		{Resources: []string{"secrets"}, Providers: []machineadm.EncryptionProvider{kms("a", "unix:///run/kms/a.sock"), kms("b", "unix:///run/kms/b.sock")}},
		{Resources: []string{"configmaps"}, Providers: []machineadm.EncryptionProvider{kms("c", "unix:///var/run/other/c.sock")}},
	}}}
	var got []string
	for _, v := range Volumes(a) {
		got = append(got, v.Name+" "+v.HostPath+" "+v.MountPath+" "+v.PathType+" "+map[bool]string{true: "ro", false: "rw"}[v.ReadOnly])
	}
	want := []string{
		"machineadm-apiserver-config /etc/kubernetes/apiserver /etc/kubernetes/apiserver DirectoryOrCreate ro",
		"machineadm-kms-0 /run/kms /run/kms DirectoryOrCreate ro",
		"machineadm-kms-1 /var/run/other /var/run/other DirectoryOrCreate ro",
	}
	if !slices.Equal(got, want) {
		t.Errorf("volumes:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

func TestSocketPath(t *testing.T) {
	for in, ok := range map[string]bool{
		"unix:///run/kms.sock": true, "unix:///run/../kms.sock": false, "unix://run/kms.sock": false,
		"tcp://127.0.0.1:1": false, "unix:///": false, "/run/kms.sock": false,
	} {
		if _, got := SocketPath(in); got != ok {
			t.Errorf("SocketPath(%q) ok = %v, want %v", in, got, ok)
		}
	}
}

// TestFlagsFollowTheOwnerTable: every flag Flags sets is owned by its
// field in flagOwners, so validation refuses it in extraArgs.
func TestFlagsFollowTheOwnerTable(t *testing.T) {
	n := int32(1)
	a := &machineadm.APIServer{
		Audit: &machineadm.Audit{Log: &machineadm.AuditLog{Path: "/var/log/a.log", MaxAge: &n, MaxSize: &n, MaxBackups: &n},
			Webhook: &machineadm.AuditWebhook{Mode: "batch"}},
		Encryption: &machineadm.Encryption{},
		Authentication: &machineadm.Authentication{Anonymous: &machineadm.AnonymousAuthentication{},
			Webhook: &machineadm.AuthenticationWebhook{Version: "v1", CacheTTL: "2m"}},
		Authorization: &machineadm.Authorization{},
	}
	owned := OwnedFlags(a)
	flags := Flags(a)
	if len(flags) != 13 {
		t.Errorf("%d flags, want 13: %v", len(flags), flags)
	}
	for _, f := range flags {
		if _, ok := owned[f.Name]; !ok {
			t.Errorf("--%s is set but owned by no field", f.Name)
		}
	}
	if len(OwnedFlags(&machineadm.APIServer{})) != 0 {
		t.Errorf("flags owned without settings")
	}
}

// TestPathsAreTheFilesWritten: Paths names every file Files writes, in
// the same order, also the webhook kubeconfigs that only another file
// names; nothing more.
func TestPathsAreTheFilesWritten(t *testing.T) {
	kc := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://w.invalid'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n"
	a := &machineadm.APIServer{
		Audit: &machineadm.Audit{Policy: map[string]any{"rules": []any{map[string]any{"level": "Metadata"}}}, Webhook: &machineadm.AuditWebhook{KubeConfig: machineadm.SecretSource{Value: kc}}},
		Authorization: &machineadm.Authorization{Authorizers: []machineadm.Authorizer{
			{Type: "Node", Name: "node"},
			{Type: "Webhook", Name: "opa", Webhook: &machineadm.AuthorizationWebhook{KubeConfig: machineadm.SecretSource{Value: kc}, Timeout: "3s", SubjectAccessReviewVersion: "v1", MatchConditionSubjectAccessReviewVersion: "v1", FailurePolicy: "Deny"}},
			{Type: "RBAC", Name: "rbac"},
		}},
	}
	fs, err := Files(a, func(string, *machineadm.SecretSource) ([]byte, error) { return []byte(kc), nil })
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range fs {
		want = append(want, f.Path)
	}
	if got := Paths(a); !slices.Equal(got, want) || len(got) != 4 {
		t.Errorf("Paths %v\nFiles %v", got, want)
	}
}
