package systemd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	etcdphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/etcd"
	etcdutil "k8s.io/kubernetes/cmd/kubeadm/app/util/etcd"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// etcdProbeURL is the URL of the startup probe of kubeadm's etcd pod.
func (s *SystemdControlPlane) etcdProbeURL() (string, error) {
	pod := etcdphase.GetEtcdPodSpec(&s.cfg.ClusterConfiguration, &s.cfg.LocalAPIEndpoint, s.NodeName(), nil)
	p := pod.Spec.Containers[0].StartupProbe
	if p == nil || p.HTTPGet == nil {
		return "", errors.New("kubeadm's etcd pod has no HTTP startup probe")
	}
	g := p.HTTPGet
	port := g.Port.String()
	for _, cp := range pod.Spec.Containers[0].Ports {
		if g.Port.StrVal != "" && cp.Name == g.Port.StrVal {
			port = strconv.Itoa(int(cp.ContainerPort)) // a named port
		}
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(g.Host, port), Path: g.Path}
	if g.Scheme == v1.URISchemeHTTPS {
		u.Scheme = "https"
	}
	return u.String(), nil
}

// waitEtcd polls etcd's health endpoint every second until it answers 200
// or the timeout passes.
func (e *SystemdEnv) waitEtcd(ctx context.Context, s *SystemdControlPlane) error {
	u, err := s.etcdProbeURL()
	if err != nil {
		return err
	}
	if e.DryRun {
		e.planned("would wait for etcd at " + u)
		return nil
	}
	timeout := e.timeout(s.cfg)
	fmt.Fprintf(e.out(), "[systemd] waiting for etcd at %s (up to %v)\n", u, timeout)
	check := etcdCheck(u)
	var last error
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		last = check(ctx, etcdCheckTimeout)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("etcd is not healthy after %v (journalctl -u etcd): %w (last: %v)", timeout, err, last)
	}
	return nil
}

// etcdCheckTimeout bounds one request to etcd's health endpoint.
const etcdCheckTimeout = 5 * time.Second

// etcdCheck is one request to etcd's health endpoint at url (kubeadm's
// startup probe of its etcd pod: /readyz on the metrics listener),
// bounded by timeout: nil when it answers 200.
func etcdCheck(url string) func(ctx context.Context, timeout time.Duration) error {
	client := &http.Client{}
	return func(ctx context.Context, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered %s", url, resp.Status)
		}
		return nil
	}
}

// EtcdMemberAddRetries and EtcdMemberAddInterval are kubeadm's bounds for
// waiting until a new member has joined (phases/etcd: 8 × 5s).
const (
	EtcdMemberAddRetries  = 8
	EtcdMemberAddInterval = 5 * time.Second
)

// SystemdEtcdJoinPhase replaces kubeadm's join phase "etcd-join" for a
// local etcd, with kubeadm's etcd client (util/etcd) as kubeadm's
// CreateStackedEtcdStaticPodManifestFile uses it: it finds the cluster's
// etcd members (the client URLs of the control-plane Nodes' internal
// addresses and of the join endpoint's host, then the member list), adds
// this node as a learner (a rerun finds it already added), installs and
// starts etcd.service with the member list and
// --initial-cluster-state=existing, promotes the learner once it has
// caught up, and waits for the cluster to be available (8 × 5s). With an
// external etcd it does nothing.
func SystemdEtcdJoinPhase(ctx context.Context, env *SystemdEnv) error {
	s, err := env.controlPlane()
	if err != nil || !s.LocalEtcd() {
		return err
	}
	peerURL := etcdutil.GetPeerURL(&s.cfg.LocalAPIEndpoint)
	var members []EtcdMember
	var client *etcdutil.Client
	if env.DryRun {
		env.planned("would add etcd member " + peerURL)
	} else {
		kube, err := kubeconfigutil.ClientSetFromFile(filepath.Join(env.kubeconfigDir(), kubeadmconstants.AdminKubeConfigFileName))
		if err != nil {
			return err
		}
		endpoints, err := etcdEndpoints(ctx, kube, env.Config, s)
		if err != nil {
			return err
		}
		pki := s.cfg.CertificatesDir
		client, err = etcdutil.New(endpoints, filepath.Join(pki, kubeadmconstants.EtcdCACertName),
			filepath.Join(pki, kubeadmconstants.EtcdHealthcheckClientCertName), filepath.Join(pki, kubeadmconstants.EtcdHealthcheckClientKeyName))
		if err != nil {
			return fmt.Errorf("etcd client for %v: %w", endpoints, err)
		}
		if err := client.Sync(); err != nil {
			return fmt.Errorf("reading the etcd member list from %v: %w", endpoints, err)
		}
		list, err := client.AddMemberAsLearner(s.NodeName(), peerURL)
		if err != nil {
			return fmt.Errorf("adding etcd member %s: %w", peerURL, err)
		}
		for _, m := range list {
			members = append(members, EtcdMember{Name: m.Name, PeerURL: m.PeerURL})
		}
		fmt.Fprintf(env.out(), "[systemd] etcd member %s added as a learner; members %v\n", peerURL, members)
	}
	c, err := s.EtcdComponent(members)
	if err != nil {
		return err
	}
	if err := env.install(ctx, s, s.EtcdPathRules(c), []cpunits.Component{c}); err != nil {
		return err
	}
	if env.DryRun {
		return nil
	}
	id, err := client.GetMemberID(peerURL)
	if err != nil {
		return err
	}
	if err := client.MemberPromote(id); err != nil {
		return fmt.Errorf("promoting etcd learner %s: %w", peerURL, err)
	}
	if _, err := client.WaitForClusterAvailable(EtcdMemberAddRetries, EtcdMemberAddInterval); err != nil {
		return fmt.Errorf("the etcd cluster is not available after the join: %w", err)
	}
	return env.waitEtcd(ctx, s)
}

// etcdEndpoints are candidate client URLs of the existing etcd members:
// without static pods there are no etcd pods whose annotation kubeadm
// reads, so the control-plane Nodes' internal addresses and the join
// endpoint's host (port 2379) are tried; the client's Sync then reads the
// real member list from whichever answers.
func etcdEndpoints(ctx context.Context, kube clientset.Interface, cfg *machineadm.MachineBootstrapConfig, s *SystemdControlPlane) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(host string) {
		if host == "" || host == s.cfg.LocalAPIEndpoint.AdvertiseAddress {
			return
		}
		u := "https://" + net.JoinHostPort(host, strconv.Itoa(kubeadmconstants.EtcdListenClientPort))
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubeadmconstants.LabelNodeRoleControlPlane})
	if err != nil {
		return nil, fmt.Errorf("listing the control-plane nodes: %w", err)
	}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				add(a.Address)
			}
		}
	}
	if j := cfg.Spec.Join; j != nil {
		if host, _, err := net.SplitHostPort(j.APIServerEndpoint); err == nil && net.ParseIP(host) != nil {
			add(host)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no etcd member to join: no control-plane Node has an internal address and the join endpoint is not an IP address")
	}
	return out, nil
}
