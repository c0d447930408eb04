// Package crictl pins cri-tools' crictl, the CRI client the e2e uses to list
// a node's pod sandboxes as the kubelet's runtime sees them (issue 13: a
// systemd control plane runs no control-plane pods). Its own module keeps
// cri-tools' dependencies out of the other e2e tools.
package crictl
