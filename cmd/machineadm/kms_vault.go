//go:build kms_vault || kms_all

package main

// The vaulttransit recipient type of sealed secrets, linked only with -tags kms_vault
// (or kms_all) so that the default binary carries no cloud SDK.
import _ "github.com/machineadm/machineadm/pkg/seal/sealkms/vaulttransit"
