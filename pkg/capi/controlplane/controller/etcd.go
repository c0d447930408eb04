package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// EtcdClient is the part of etcd's API the control-plane controller uses:
// list the members with their health, and remove one.
type EtcdClient interface {
	// Members lists the members; Healthy says whether each answered a
	// status request.
	Members(ctx context.Context) ([]EtcdMember, error)
	// RemoveMember removes the member with this ID.
	RemoveMember(ctx context.Context, id uint64) error
	// Close releases the connections.
	Close() error
}

// EtcdDialer opens an EtcdClient to a Cluster's stacked etcd. endpoints
// are the control-plane Machines' internal addresses (host only).
type EtcdDialer func(ctx context.Context, c client.Client, cl *clusterv1.Cluster, endpoints []string) (EtcdClient, error)

// etcdClientPort is the port kubeadm's stacked etcd serves clients on.
const etcdClientPort = "2379"

// Timeouts of the etcd client.
const (
	etcdDialTimeout    = 5 * time.Second
	etcdRequestTimeout = 5 * time.Second
	// etcdClientCertLifetime: the controller mints a fresh client
	// certificate per connection.
	etcdClientCertLifetime = time.Hour
)

// DirectEtcdDialer connects straight to the members' client URLs
// (https://<machine internal address>:2379), as a client authenticated
// with a short-lived certificate it signs with the Cluster's etcd CA
// ("<cluster>-etcd"). It works for both runtimes (static pods and systemd
// units alike listen there) when the management cluster can reach the
// machines' internal addresses; the kubeadm control-plane provider
// tunnels through the API server to the etcd Pod instead, which a
// systemd-run etcd does not have.
//
// An endpoint that already carries a port (host:port) is used as it is.
func DirectEtcdDialer(ctx context.Context, c client.Client, cl *clusterv1.Cluster, endpoints []string) (EtcdClient, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("no control-plane Machine has an internal address")
	}
	caCert, caKey, err := readCA(ctx, c, cl.Namespace, secretName(cl.Name, "etcd"))
	if err != nil {
		return nil, err
	}
	crt, key, err := signClientCert(caCert, caKey, "machineadm-controller-etcd-client", nil, time.Now(), etcdClientCertLifetime)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	urls := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		if _, _, err := net.SplitHostPort(e); err != nil {
			e = net.JoinHostPort(e, etcdClientPort)
		}
		urls = append(urls, "https://"+e)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   urls,
		DialTimeout: etcdDialTimeout,
		TLS:         &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		Logger:      zap.NewNop(),
		Context:     ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd at %v: %w", urls, err)
	}
	return &directEtcd{cli: cli}, nil
}

type directEtcd struct{ cli *clientv3.Client }

func (d *directEtcd) Members(ctx context.Context) ([]EtcdMember, error) {
	lctx, cancel := context.WithTimeout(ctx, etcdRequestTimeout)
	defer cancel()
	resp, err := d.cli.MemberList(lctx)
	if err != nil {
		return nil, fmt.Errorf("listing etcd members: %w", err)
	}
	out := make([]EtcdMember, 0, len(resp.Members))
	for _, m := range resp.Members {
		mb := EtcdMember{ID: m.ID, Name: m.Name}
		// A member added but never started has no name and no client URL.
		for _, u := range m.ClientURLs {
			if _, err := url.Parse(u); err != nil {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, etcdRequestTimeout)
			st, err := d.cli.Status(sctx, u)
			cancel()
			if err == nil && statusHealthy(st) {
				mb.Healthy = true
				break
			}
		}
		out = append(out, mb)
	}
	return out, nil
}

// statusHealthy says whether a member's status answer is that of a
// working member: it follows (or is) a leader, and reports no alarm or
// error (NOSPACE, CORRUPT). A member that answers but has no leader (cut
// off from its peers) or raises an alarm does not count towards the
// quorum the guard keeps.
func statusHealthy(st *clientv3.StatusResponse) bool {
	return st != nil && st.Leader != 0 && len(st.Errors) == 0
}

func (d *directEtcd) RemoveMember(ctx context.Context, id uint64) error {
	rctx, cancel := context.WithTimeout(ctx, etcdRequestTimeout)
	defer cancel()
	if _, err := d.cli.MemberRemove(rctx, id); err != nil {
		return fmt.Errorf("removing etcd member %x: %w", id, err)
	}
	return nil
}

func (d *directEtcd) Close() error { return d.cli.Close() }
