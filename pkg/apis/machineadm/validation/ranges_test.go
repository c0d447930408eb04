package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

func TestValidateRanges(t *testing.T) {
	net := func(pods, svc string) func(c *spec) {
		return func(c *spec) {
			c.Spec.Kubernetes.Networking.PodSubnet, c.Spec.Kubernetes.Networking.ServiceSubnet = pods, svc
		}
	}
	file := func(owner, group string) func(c *spec) {
		return func(c *spec) {
			c.Spec.Host.Files = []machineadm.File{{Path: "/etc/x", Content: "x", Mode: "0644", Owner: owner, Group: group}}
		}
	}
	const svcPath = "spec.kubernetes.networking.serviceSubnet"
	runCases(t, []vcase{
		{name: "subnets overlap", base: cpInit, mutate: net("10.96.0.0/16", "10.96.0.0/12"), want: []fe{{svcPath, inv}}},
		{name: "service inside pods", base: cpInit, mutate: net("10.0.0.0/8", "10.96.0.0/12"), want: []fe{{svcPath, inv}}},
		{name: "ipv6 overlap in dual stack", base: cpInit, mutate: net("10.244.0.0/16,fd00:10::/56", "10.96.0.0/12,fd00:10::/108"), want: []fe{{svcPath, inv}}},
		{name: "subnets apart", base: cpInit, mutate: net("10.244.0.0/16,fd00:10:244::/56", "10.96.0.0/12,fd00:10:96::/108")},
		{name: "registry host as URL", base: worker, mutate: func(c *spec) {
			c.Spec.Host.Containerd = &machineadm.Containerd{ConfigFile: "/etc/containerd/config.toml", CgroupDriver: "systemd", Registries: []machineadm.Registry{{Host: "https://docker.io"}}}
		}, want: []fe{{"spec.host.containerd.registries[0].host", inv}}},
		{name: "endpoint as URL", base: worker, mutate: func(c *spec) { c.Spec.Join.APIServerEndpoint = "https://cp.example:6443" },
			want: []fe{{"spec.join.apiServerEndpoint", inv}}},
		{name: "url port out of range", base: worker, mutate: func(c *spec) {
			c.Spec.Host.Containerd = &machineadm.Containerd{ConfigFile: "/etc/containerd/config.toml", CgroupDriver: "systemd", Registries: []machineadm.Registry{{Host: "docker.io", Server: "https://registry-1.docker.io:99999"}}}
		}, want: []fe{{"spec.host.containerd.registries[0].server", inv}}},
		{name: "uid too large", base: worker, mutate: file("4294967295", "0"), want: []fe{{"spec.host.files[0].owner", inv}}},
		{name: "gid overflows uint64", base: worker, mutate: file("0", "99999999999999999999999"), want: []fe{{"spec.host.files[0].group", inv}}},
		{name: "largest uid", base: worker, mutate: file("4294967294", "4294967294")},
		{name: "user name too long", base: worker, mutate: file(strings.Repeat("u", 33), "0"), want: []fe{{"spec.host.files[0].owner", field.ErrorTypeTooLong}}},
		{name: "join timeout below a second", base: worker, mutate: func(c *spec) { c.Spec.Join.Timeout = "500ms" }, want: []fe{{"spec.join.timeout", inv}}},
		{name: "token ttl below a second", base: cpInit, mutate: func(c *spec) {
			c.Spec.ControlPlane.BootstrapTokens = []machineadm.BootstrapToken{{Token: machineadm.SecretSource{File: "/t"}, TTL: "1ns"}}
		}, want: []fe{{"spec.controlPlane.bootstrapTokens[0].ttl", inv}}},
		{name: "name with escape", base: worker, mutate: func(c *spec) { c.Metadata.Name = "w1\x1b]0;owned\x07" }, want: []fe{{"metadata.name", inv}}},
		{name: "name with bidi", base: worker, mutate: func(c *spec) { c.Metadata.Name = "w1\u202etxt" }, want: []fe{{"metadata.name", inv}}},
		{name: "machine name", base: worker, mutate: func(c *spec) { c.Metadata.Name = "cluster-a-md-0-x7k2p" }},
	})
}

// TestRangeMessages: the messages say what to do, and an invalid name is
// quoted escaped, never raw.
func TestRangeMessages(t *testing.T) {
	c := base(t, worker)
	c.Metadata.Name = "w1\x1b[2J"
	c.Spec.Host.Containerd = &machineadm.Containerd{ConfigFile: "/etc/containerd/config.toml", CgroupDriver: "systemd", Registries: []machineadm.Registry{{Host: "https://docker.io"}}}
	msg := Validate(c).Errors.ToAggregate().Error()
	if strings.Contains(msg, "\x1b") || !strings.Contains(msg, `w1\x1b[2J`) {
		t.Errorf("name not escaped: %q", msg)
	}
	if !strings.Contains(msg, `drop "https://"`) || strings.Contains(msg, "port must be") {
		t.Errorf("registry host message: %q", msg)
	}
}
