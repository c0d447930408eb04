//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
)

// scenarioHAJoin: cp2 joins as a second control-plane node, fetching the
// shared certificates with the certificate key; afterwards etcd has two
// members and cp2 carries the control-plane label, taint and static pods.
func scenarioHAJoin(ctx context.Context, t *testing.T, e *env, c *cluster) {
	m := e.bootMachines(ctx, t, cp2)[0]
	if err := deliver(m, secureAPIServer(controlPlaneSpec(cp2, v1alpha1.ActionJoin, c.secrets.caHash)), c.secrets); err != nil {
		fatalln(t, err)
	}
	// Not fatal: when bootstrap fails late, the checks below still show how
	// far the join got.
	start := mustBootstrap(ctx, t, m, controlPlaneJoinPhases, false)
	ready, err := waitNodesReady(ctx, c.cs, readyTimeout, cp2.Name)
	if err != nil {
		dumpDiagnostics(ctx, t, m)
		fatalln(t, err)
	}
	timing(t, "cp2-bootstrap-start-to-node-ready", ready[cp2.Name].Sub(start))
	if err := checkControlPlaneNode(ctx, c.cs, cp2.Name); err != nil {
		errorln(t, err)
	}
	if err := waitStaticPodsRunning(ctx, c.cs, cp2.Name, podTimeout); err != nil {
		dumpDiagnostics(ctx, t, m)
		fatalln(t, err)
	}
	members, err := etcdMembers(ctx, c.cp1)
	if err != nil {
		fatalln(t, err)
	}
	t.Logf("etcd members: %v", members)
	if len(members) != 2 {
		errorf(t, "etcd has %d members %v, want 2", len(members), members)
	}
	checkDecryptsThrough(ctx, t, c.cp1, m, cp2.IP)
}

// etcdMembers lists the etcd members through cp1's etcd client endpoint,
// authenticating with the API server's etcd client certificate.
func etcdMembers(ctx context.Context, cp *Machine) ([]string, error) {
	cli, err := etcdClient(cp, cp1.IP)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := cli.MemberList(lctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range resp.Members {
		names = append(names, m.Name)
	}
	return names, nil
}
