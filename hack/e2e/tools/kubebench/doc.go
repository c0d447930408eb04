// Package kubebench pins kube-bench (github.com/aquasecurity/kube-bench),
// the independent CIS benchmark checker the compliance e2e runs on the
// nodes of a cluster made with spec.security.profile, in a module of its
// own so its dependencies leave the other tools' go.sum alone. Its
// benchmark definitions (cfg/) come with the module; components.sh copies
// them beside the binary. Never imported; built with
// `go build github.com/aquasecurity/kube-bench` in this directory.
package kubebench
