//go:build kms_azure || kms_all

package main

// The azurekeyvault recipient type of sealed secrets, linked only with -tags kms_azure
// (or kms_all) so that the default binary carries no cloud SDK.
import _ "github.com/machineadm/machineadm/pkg/seal/sealkms/azurekeyvault"
