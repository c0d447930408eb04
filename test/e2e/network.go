//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
)

// The harness's private network. Only the bridge carries these addresses;
// the host keeps ip_forward as it is and adds no route or NAT, so machines
// reach only each other and the host's bridge address.
const (
	bridgeName = "mae2e0"
	bridgeCIDR = "10.213.0.1/24"
	bridgeIP   = "10.213.0.1"
)

// createBridge creates the harness bridge with its host address. A bridge
// left by an earlier, killed run is deleted first.
func createBridge(ctx context.Context) error {
	if _, err := net.InterfaceByName(bridgeName); err == nil {
		if err := deleteBridge(ctx); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", bridgeCIDR, "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// deleteBridge removes the harness bridge; a missing bridge is not an error.
func deleteBridge(ctx context.Context) error {
	if _, err := net.InterfaceByName(bridgeName); err != nil {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "ip", "link", "del", bridgeName).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link del %s: %w: %s", bridgeName, err, out)
	}
	return nil
}
