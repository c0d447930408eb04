// Package kubeadm is machineadm's only adapter around kubeadm
// (k8s.io/kubernetes/cmd/kubeadm, compiled in). It translates the hub
// machine spec into kubeadm's configuration types, runs kubeadm's own
// defaulting and validation on the result, and runs kubeadm's init and join
// phases in-process. No package outside pkg/kubeadm/... imports kubeadm
// (internal/fences: TestOnlyTheAdapterImportsKubeadm).
//
// This package holds only this map; the adapter is its sub-packages, each
// owning one concern:
//
//   - translate: the spec to kubeadm's configuration documents
//     (Translate, one translator file per kubeadm config API version),
//     the API version table, the version skew kubeadm supports, the
//     secret inputs a spec consumes and the redacted translation of
//     `config kubeadm` (CheckSpec).
//   - run: kubeadm's phase table (the only list of kubeadm phase names),
//     the Runner and Session that run phases in-process through kubeadm's
//     command tree, the dry-run plan (files by host path, API objects by
//     kind and name), a join dry run's stand-in cluster-info, and the
//     classification of a phase's failure.
//   - systemd: the Systemd control-plane runtime: kubeadm's static pods
//     as systemd units, and the phases that replace kubeadm's in that
//     runtime (the phase table's Systemd column).
//   - discovery: the wait for a signed, pinned cluster-info ConfigMap
//     before a join's kubeadm discovery.
//   - repair: crash repair before a certs or kubeconfig phase runs again
//     (a lone key, a cut-short kubeconfig file).
//   - pki: the cluster CA set (pki init, its hash, tokens, certificate
//     keys) and the checks of a CA set and of resolved secrets.
//
// Import order, no cycles: translate and discovery are leaves; pki and
// systemd use translate; run uses systemd and discovery; repair's tests
// use run and pki.
// internal/stdio is the lock and capture of the standard streams that run
// and pki share; internal/kubeadmtest holds helpers for their tests.
package kubeadm
