// Package testspec holds small machine specs shared by tests of several
// packages.
package testspec

// MinimalWorker is the smallest valid worker-join spec: role, version and
// bootstrap-token discovery with a secret file. Tests add to it or break
// it.
const MinimalWorker = `apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.demo.example:6443
    token: {file: /etc/machineadm/secrets/bootstrap-token}
    caCertHashes: ["sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10"]
`
