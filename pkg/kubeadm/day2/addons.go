package day2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	upgradephases "k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/upgrade"
	"k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/workflow"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	dnsaddon "k8s.io/kubernetes/cmd/kubeadm/app/phases/addons/dns"
	proxyaddon "k8s.io/kubernetes/cmd/kubeadm/app/phases/addons/proxy"
)

// apiServerVersionTimeout bounds one API server's /version request in
// UnupgradedAPIServers.
const apiServerVersionTimeout = 10 * time.Second

// SystemdAddons is kubeadm's addon phase (addon/coredns,
// addon/kube-proxy: dnsaddon.EnsureDNSAddon, proxyaddon.EnsureProxyAddon)
// for a cluster whose API servers run as systemd units. kubeadm upgrades
// the addons only once every control plane runs the new version, and
// learns that from the kube-apiserver mirror pods' images
// (UnupgradedControlPlaneInstances), which such a cluster does not have:
// it fails with "cannot find kube-apiserver Pod". This phase asks every
// API server itself instead (UnupgradedAPIServers), with the admin
// credential adminKubeconfig (host path), and like kubeadm skips the
// addons, saying which instances are behind, until none is.
func SystemdAddons(adminKubeconfig string) *workflow.Phase {
	run := func(ensure func(d upgradephases.Data) error) func(workflow.RunData) error {
		return func(c workflow.RunData) error {
			d, ok := c.(upgradephases.Data)
			if !ok {
				return errors.New("addon phase invoked with an invalid data struct")
			}
			cfg := d.InitCfg()
			behind, err := UnupgradedAPIServers(context.Background(), adminKubeconfig, cfg.LocalAPIEndpoint.AdvertiseAddress, cfg.KubernetesVersion)
			if err != nil {
				return fmt.Errorf("failed to determine whether all the control plane instances have been upgraded: %w", err)
			}
			if len(behind) > 0 {
				fmt.Fprintf(d.OutputWriter(), "[upgrade/addon] Skipping upgrade of addons because the API servers %v have not been upgraded to %s\n", behind, cfg.KubernetesVersion)
				return nil
			}
			return ensure(d)
		}
	}
	return &workflow.Phase{
		Name:  "addon",
		Short: "Upgrade the default kubeadm addons (API servers asked for their versions)",
		Phases: []workflow.Phase{
			{
				Name:  "coredns",
				Short: "Upgrade the CoreDNS addon",
				Run: run(func(d upgradephases.Data) error {
					cfg := d.InitCfg()
					if cfg.DNS.Disabled {
						fmt.Fprintln(d.OutputWriter(), "[upgrade/addon] Skipping the addon/coredns phase. The addon is disabled.")
						return nil
					}
					return dnsaddon.EnsureDNSAddon(&cfg.ClusterConfiguration, d.Client(), d.PatchesDir(), d.OutputWriter(), false)
				}),
			},
			{
				Name:  "kube-proxy",
				Short: "Upgrade the kube-proxy addon",
				Run: run(func(d upgradephases.Data) error {
					cfg := d.InitCfg()
					if cfg.Proxy.Disabled {
						fmt.Fprintln(d.OutputWriter(), "[upgrade/addon] Skipping the addon/kube-proxy phase. The addon is disabled.")
						return nil
					}
					return proxyaddon.EnsureProxyAddon(&cfg.ClusterConfiguration, &cfg.LocalAPIEndpoint, d.Client(), d.PatchesDir(), d.OutputWriter(), false)
				}),
			},
		},
	}
}

// UnupgradedAPIServers returns the API servers of the cluster, other than
// the one at localAddress, whose /version is older than version (by
// major, minor and patch), as "ADDRESS:PORT (VERSION)". The instances are
// the endpoints of the EndpointSlice default/kubernetes, which the API
// servers themselves keep (their endpoint reconciler writes the slice of
// the Service's name; another slice with the Service's label is not
// theirs and is not asked); each is asked with the credential at
// adminKubeconfig (host path), within 10 seconds. An instance that does
// not answer counts as not upgraded. So does one that is down long enough
// to have left the slice: when the cluster has more control-plane Nodes
// (label node-role.kubernetes.io/control-plane) than API servers in the
// slice (this node's counted whether or not it is there yet), the missing
// ones are named "N control-plane Nodes, M API servers", as kubeadm,
// which reads every control plane's mirror pod, would not count them
// upgraded either.
func UnupgradedAPIServers(ctx context.Context, adminKubeconfig, localAddress, version string) ([]string, error) {
	want, err := utilversion.ParseSemantic(version)
	if err != nil {
		return nil, fmt.Errorf("the target version %q: %w", version, err)
	}
	base, err := RESTConfig(adminKubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(base)
	if err != nil {
		return nil, err
	}
	slice, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the API servers (the EndpointSlice default/kubernetes): %w", err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubeadmconstants.LabelNodeRoleControlPlane})
	if err != nil {
		return nil, fmt.Errorf("listing the control-plane Nodes: %w", err)
	}
	var behind []string
	servers := 1 // this node's
	port := int32(443)
	for _, p := range slice.Ports {
		if p.Port != nil && (p.Name == nil || *p.Name == "https") {
			port = *p.Port
		}
	}
	for _, e := range slice.Endpoints {
		for _, addr := range e.Addresses {
			if addr == localAddress {
				continue
			}
			servers++
			hostPort := net.JoinHostPort(addr, strconv.Itoa(int(port)))
			cfg := *base
			cfg.Host = "https://" + hostPort
			cfg.Timeout = apiServerVersionTimeout
			c, err := kubernetes.NewForConfig(&cfg)
			if err != nil {
				return nil, err
			}
			got := "unreachable"
			if v, err := c.Discovery().ServerVersion(); err == nil {
				got = v.GitVersion
				if gv, err := utilversion.ParseSemantic(v.GitVersion); err == nil &&
					gv.Major() == want.Major() && gv.Minor() == want.Minor() && gv.Patch() >= want.Patch() {
					continue
				}
			}
			behind = append(behind, hostPort+" ("+got+")")
		}
	}
	if n := len(nodes.Items); n > servers {
		behind = append(behind, fmt.Sprintf("%d not in the EndpointSlice default/kubernetes (%d control-plane Nodes, %d API servers)", n-servers, n, servers))
	}
	return behind, nil
}
