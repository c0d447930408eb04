//go:build e2e

// Package e2e is machineadm's end-to-end test: it boots real machines
// (systemd-nspawn containers of a cached Debian root filesystem, systemd as
// PID 1, Debian's containerd and runc) on a bridge the test creates, runs
// `machineadm bootstrap` inside them against real etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kubelet, and checks the cluster
// with client-go.
//
// Run it with `make e2e` (which prepares the cached components first with
// hack/e2e/prepare.sh); it needs root. Environment:
//
//	MACHINEADM_E2E_CACHE  components and root filesystem (default /var/cache/machineadm-e2e)
//	MACHINEADM_E2E_WORK   per-run machine directories (default /var/tmp/machineadm-e2e)
//	MACHINEADM_E2E_KEEP   "1" keeps machines of a failed test for inspection
//	MACHINEADM_BIN        the machineadm binary (default ../../bin/machineadm)
//	MACHINEADM_CONTROLLER_IMAGE  machineadm-controller's image tarball for TestClusterAPI
//	                      (default ../../bin/images/machineadm-controller.tar, make image-controller)
//	MACHINEADM_E2E_AGENTS  the agent builds that image carries, for their digests
//	                      (default ../../bin/agents-root/agents, make agents)
//	MACHINEADM_E2E_NETNS  a network namespace file to run in instead of a new one
//	MACHINEADM_E2E_DEMO_DIR  `make demo` (demo.go): scenario 1, narrated, cluster kept
//
// Network: the machines only have the test's bridge (10.213.0.0/24) and
// loopback; the host does not forward, so nothing leaves that bridge.
package e2e
