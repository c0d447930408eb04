//go:build kms_gcp || kms_all

package main

// The gcpkms recipient type of sealed secrets, linked only with -tags kms_gcp
// (or kms_all) so that the default binary carries no cloud SDK.
import _ "github.com/machineadm/machineadm/pkg/seal/sealkms/gcpkms"
