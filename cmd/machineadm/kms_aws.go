//go:build kms_aws || kms_all

package main

// The awskms recipient type of sealed secrets, linked only with -tags kms_aws
// (or kms_all) so that the default binary carries no cloud SDK.
import _ "github.com/machineadm/machineadm/pkg/seal/sealkms/awskms"
