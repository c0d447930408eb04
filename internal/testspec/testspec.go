// Package testspec holds small machine specs shared by tests of several
// packages.
package testspec

import "github.com/machineadm/machineadm/pkg/apis/machineadm"

// MinimalWorker is the smallest valid worker-join spec: role, version and
// bootstrap-token discovery with a secret file. Tests add to it or break
// it. It is a document of the newest version (machineadm.LatestAPIVersion).
const MinimalWorker = `apiVersion: ` + machineadm.LatestAPIVersion + `
kind: ` + machineadm.Kind + `
spec:
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.demo.example:6443
    token: {file: /etc/machineadm/secrets/bootstrap-token}
    caCertHashes: ["sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10"]
`
