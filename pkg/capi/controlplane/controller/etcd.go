package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
	tc := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	return &directEtcd{
		urls: urls,
		tls:  tc,
		hc: &http.Client{Transport: &http.Transport{
			TLSClientConfig:     tc,
			DialContext:         (&net.Dialer{Timeout: etcdDialTimeout}).DialContext,
			TLSHandshakeTimeout: etcdDialTimeout,
			MaxIdleConnsPerHost: 1,
		}},
	}, nil
}

// directEtcd speaks to etcd's JSON gateway: the HTTP mapping of its v3
// gRPC API (POST /v3/<service>/<method>, protobuf's JSON encoding, 64-bit
// integers as strings) that every etcd v3 serves on its client URLs
// (--enable-grpc-gateway, on by default; kubeadm's stacked etcd and
// machineadm's etcd unit keep it). Three calls are needed, and etcd's Go
// client would link gRPC and protobuf's runtime into the controller:
// about 2 MiB more resident at start (docs/design.md, "etcd through its
// JSON gateway").
type directEtcd struct {
	urls []string
	tls  *tls.Config
	hc   *http.Client
}

// gatewayError is the gateway's answer to a failed call: the gRPC status.
type gatewayError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// jsonUint64 is a uint64 in protobuf's JSON encoding: a decimal string
// (or, from older gateways, a number).
type jsonUint64 uint64

func (u *jsonUint64) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseUint(strings.Trim(string(b), `"`), 10, 64)
	if err != nil {
		return fmt.Errorf("not a uint64: %s", b)
	}
	*u = jsonUint64(v)
	return nil
}

// maxGatewayAnswer bounds an answer read: a member list of a few members
// is a few kilobytes.
const maxGatewayAnswer = 1 << 20

// call posts in to base+path and decodes the answer into out, within
// etcdRequestTimeout.
func (d *directEtcd) call(ctx context.Context, base, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, etcdRequestTimeout)
	defer cancel()
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxGatewayAnswer))
	if err != nil {
		return fmt.Errorf("%s%s: %w", base, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var ge gatewayError
		if json.Unmarshal(b, &ge) == nil && ge.Message != "" {
			return fmt.Errorf("%s%s: %s", base, path, ge.Message)
		}
		return fmt.Errorf("%s%s: HTTP %d", base, path, resp.StatusCode)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s%s: %w", base, path, err)
	}
	return nil
}

// first makes the call against each endpoint in turn until one answers;
// the last error otherwise.
func (d *directEtcd) first(ctx context.Context, path string, in, out any) error {
	var err error
	for _, u := range d.urls {
		if err = d.call(ctx, u, path, in, out); err == nil {
			return nil
		}
	}
	return err
}

type memberList struct {
	Members []struct {
		ID         jsonUint64 `json:"ID"`
		Name       string     `json:"name"`
		ClientURLs []string   `json:"clientURLs"`
	} `json:"members"`
}

// statusResponse is the part of etcd's StatusResponse the guard reads.
type statusResponse struct {
	Leader jsonUint64 `json:"leader"`
	Errors []string   `json:"errors"`
}

func (d *directEtcd) Members(ctx context.Context) ([]EtcdMember, error) {
	var resp memberList
	if err := d.first(ctx, "/v3/cluster/member/list", struct{}{}, &resp); err != nil {
		return nil, fmt.Errorf("listing etcd members: %w", err)
	}
	out := make([]EtcdMember, 0, len(resp.Members))
	for _, m := range resp.Members {
		mb := EtcdMember{ID: uint64(m.ID), Name: m.Name}
		// A member added but never started has no name and no client URL.
		for _, u := range m.ClientURLs {
			if _, err := url.Parse(u); err != nil {
				continue
			}
			var st statusResponse
			if err := d.call(ctx, strings.TrimSuffix(u, "/"), "/v3/maintenance/status", struct{}{}, &st); err == nil && statusHealthy(&st) {
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
func statusHealthy(st *statusResponse) bool {
	return st != nil && st.Leader != 0 && len(st.Errors) == 0
}

func (d *directEtcd) RemoveMember(ctx context.Context, id uint64) error {
	in := map[string]string{"ID": strconv.FormatUint(id, 10)}
	if err := d.first(ctx, "/v3/cluster/member/remove", in, &struct{}{}); err != nil {
		return fmt.Errorf("removing etcd member %x: %w", id, err)
	}
	return nil
}

func (d *directEtcd) Close() error {
	d.hc.CloseIdleConnections()
	return nil
}
