package main

import (
	"os/exec"
	"strings"
	"testing"
)

// kmsPackages are, per build tag, the recipient package and its vendor
// SDK's package that the tag links into machineadm.
var kmsPackages = map[string][]string{
	"kms_aws":   {"github.com/machineadm/machineadm/pkg/seal/sealkms/awskms", "github.com/aws/aws-sdk-go-v2/service/kms"},
	"kms_gcp":   {"github.com/machineadm/machineadm/pkg/seal/sealkms/gcpkms", "cloud.google.com/go/kms/apiv1"},
	"kms_azure": {"github.com/machineadm/machineadm/pkg/seal/sealkms/azurekeyvault", "github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azkeys"},
	"kms_vault": {"github.com/machineadm/machineadm/pkg/seal/sealkms/vaulttransit", "github.com/hashicorp/vault/api"},
}

func deps(t *testing.T, tags string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", tags, "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -tags %q -deps: %v", tags, err)
	}
	m := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		m[p] = true
	}
	return m
}

// TestKMSBuildTags is the fence of the cloud KMS recipient types: the
// default binary links none of the cloud SDKs, each kms_* tag links its
// own type and SDK only, and kms_all links all four.
func TestKMSBuildTags(t *testing.T) {
	if testing.Short() {
		t.Skip("go list -deps is slow")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	all := deps(t, "kms_all")
	none := deps(t, "")
	for _, pkgs := range kmsPackages {
		for _, p := range pkgs {
			if none[p] {
				t.Errorf("the default build links %s", p)
			}
			if !all[p] {
				t.Errorf("-tags kms_all does not link %s", p)
			}
		}
	}
	one := deps(t, "kms_vault")
	for tag, pkgs := range kmsPackages {
		for _, p := range pkgs {
			if one[p] != (tag == "kms_vault") {
				t.Errorf("-tags kms_vault: links %s = %v", p, one[p])
			}
		}
	}
}
