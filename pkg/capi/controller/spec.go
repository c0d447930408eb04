package controller

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	mspec "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// Paths on the machine where the sealed secrets are opened to. The spec
// names them; the Sealer carries their content.
const (
	secretDir          = "/run/machineadm/secrets"
	tokenPath          = secretDir + "/token"
	certificateKeyPath = secretDir + "/certificate-key"
	pkiDir             = secretDir + "/pki"
)

// role is what a Machine is and does.
type plan struct {
	controlPlane bool
	action       mspec.Action
	// pool: the data is every instance of a MachinePool's, so it carries
	// nothing that names one machine.
	pool bool
}

// joinInfo is what a joining machine needs.
type joinInfo struct {
	endpoint   string // host:port
	caCertHash string // sha256:<hex>
}

// buildSpec assembles the machine spec for one Machine from its
// MachineadmConfig, the Machine and the Cluster. The controller's own
// secrets (token, certificate key, CA set) are referenced by path and the
// caller supplies their values to the Sealer; the values of the Secrets
// the config refers to (refs, from readSecretRefs) go in inline, where the
// Sealer seals them too.
func buildSpec(cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, c *clusterv1.Cluster, p plan, j joinInfo, refs *refValues) (*mspec.MachineBootstrapConfig, error) {
	s := &mspec.MachineBootstrapConfig{
		APIVersion: mspec.APIVersion,
		Kind:       mspec.Kind,
		Metadata:   mspec.ObjectMeta{Name: m.Name},
	}
	sp := &s.Spec
	sp.Role = mspec.RoleWorker
	if p.controlPlane {
		sp.Role = mspec.RoleControlPlane
	}
	if cfg.Spec.OS == bootstrapv1.OSWindows {
		// Left out for Linux: the agent's default, and agents older than
		// spec.os read the spec too.
		sp.OS = mspec.OSWindows
		if p.controlPlane {
			return nil, fieldError("spec.os", "windows: the Machine has the control-plane label ("+clusterv1.MachineControlPlaneLabel+"), and kubeadm runs no control plane on Windows")
		}
	}
	sp.Action = p.action
	sp.Kubernetes = mspec.Kubernetes{
		Version:              m.Spec.Version,
		ClusterName:          c.Name,
		ControlPlaneEndpoint: net.JoinHostPort(c.Spec.ControlPlaneEndpoint.Host, strconv.Itoa(int(c.Spec.ControlPlaneEndpoint.Port))),
		Networking: mspec.Networking{
			PodSubnet:     c.Spec.ClusterNetwork.Pods.String(),
			ServiceSubnet: c.Spec.ClusterNetwork.Services.String(),
			DNSDomain:     c.Spec.ClusterNetwork.ServiceDomain,
		},
	}
	if p.controlPlane {
		sp.Kubernetes.ImageRepository = cfg.Spec.Kubernetes.ImageRepository
		sp.Kubernetes.FeatureGates = cfg.Spec.Kubernetes.FeatureGates
		cp, err := controlPlane(cfg.Spec.ControlPlane, c)
		if err != nil {
			return nil, err
		}
		if in := cfg.Spec.ControlPlane; in != nil {
			if err := applyAPIServerRefs(refs, &in.APIServer, &cp.APIServer); err != nil {
				return nil, err
			}
		}
		cp.CertificateKey = &mspec.SecretSource{File: certificateKeyPath}
		if p.action == mspec.ActionInit {
			cp.PKI.Dir = pkiDir
		}
		sp.ControlPlane = cp
	} else if cfg.Spec.ControlPlane != nil {
		return nil, fieldError("spec.controlPlane", "is only for control-plane Machines (label "+clusterv1.MachineControlPlaneLabel+")")
	}
	if p.action == mspec.ActionJoin {
		sp.Join = &mspec.Join{
			APIServerEndpoint: j.endpoint,
			Token:             mspec.SecretSource{File: tokenPath},
			CACertHashes:      []string{j.caCertHash},
		}
	}
	if err := strictCopy("spec.node", cfg.Spec.Node, &sp.Node); err != nil {
		return nil, err
	}
	if err := strictCopy("spec.host", stripRefs(cfg.Spec.Host), &sp.Host); err != nil {
		return nil, err
	}
	if p.pool && cfg.Spec.Host.DomainJoin != nil && cfg.Spec.Host.DomainJoin.OfflineJoinBlobFrom != nil {
		return nil, fieldError("spec.host.domainJoin.offlineJoinBlobFrom", "a MachinePool's instances share its bootstrap data, and an offline join blob provisions one computer account: use credentials")
	}
	applyRefs(refs, cfg.Spec.Host.DomainJoin, &sp.Host)
	if sp.OS == mspec.OSWindows && !p.pool {
		// A pool's instances keep the computer names their infrastructure
		// gives them: one name for all of them would be one Node.
		sp.Node.Name = WindowsNodeName(m.Name)
	}
	if p.controlPlane {
		if err := systemdRuntime(cfg, sp); err != nil {
			return nil, err
		}
	}
	if x := externalEtcd(cfg); p.controlPlane && x != nil {
		if refs == nil || refs.etcd == nil {
			return nil, fmt.Errorf("spec.controlPlane.etcd.external: the client certificate was not read")
		}
		ext, files := externalEtcdSpec(x, refs.etcd)
		// The etcd files come after the config's own: a config file on one
		// of their paths would be reported as a duplicate of an entry the
		// config does not have.
		for i, f := range cfg.Spec.Host.Files {
			for _, e := range []struct{ path, field string }{{ext.CAFile, "caFile"}, {ext.CertFile, "certFile"}, {ext.KeyFile, "keyFile"}} {
				if f.Path == e.path {
					return nil, fieldError(fmt.Sprintf("spec.host.files[%d].path", i), fmt.Sprintf("%q is spec.controlPlane.etcd.external.%s, where the controller writes the external etcd's file", f.Path, e.field))
				}
			}
		}
		sp.ControlPlane.Etcd = mspec.Etcd{External: ext}
		sp.Host.Files = append(sp.Host.Files, files...)
	}
	if err := strictCopy("spec.report", cfg.Spec.Report, &sp.Report); err != nil {
		return nil, err
	}
	if err := securitySpec(cfg, sp, p.controlPlane); err != nil {
		return nil, err
	}
	return s, nil
}

func controlPlane(in *bootstrapv1.ControlPlaneSpec, c *clusterv1.Cluster) (*mspec.ControlPlane, error) {
	out := &mspec.ControlPlane{BindPort: c.Spec.ClusterNetwork.APIServerPort}
	if in == nil {
		return out, nil
	}
	if in.BindPort != 0 {
		out.BindPort = in.BindPort
	}
	out.PKI.EncryptionAlgorithm = in.EncryptionAlgorithm
	for _, x := range []struct {
		path     string
		from, to any
	}{
		{"spec.controlPlane.apiServer", apiServerWithoutRefs(in.APIServer), &out.APIServer},
		{"spec.controlPlane.controllerManager", in.ControllerManager, &out.ControllerManager},
		{"spec.controlPlane.scheduler", in.Scheduler, &out.Scheduler},
	} {
		if err := strictCopy(x.path, x.from, x.to); err != nil {
			return nil, err
		}
	}
	// The external etcd (which has Secret references) is set by buildSpec.
	if in.Etcd != nil && in.Etcd.Local != nil {
		out.Etcd.Local = &mspec.LocalEtcd{}
		if err := strictCopy("spec.controlPlane.etcd.local", in.Etcd.Local, out.Etcd.Local); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// strictCopy copies a provider API value into the machine spec type of the
// same JSON shape; a field without a counterpart is an error.
func strictCopy(path string, in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if string(data) == "null" {
		return nil
	}
	strict, err := sigsjson.UnmarshalStrict(data, out)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("%s: fields without a machine spec counterpart: %v", path, strict)
	}
	return nil
}

// specYAML is the spec document as the machine receives it.
func specYAML(s *mspec.MachineBootstrapConfig) ([]byte, error) {
	return yaml.Marshal(s)
}

// fieldErr is an error caused by the config's content, reported with its
// field path; it is not retried until the config changes.
type fieldErr struct{ path, msg string }

func (e *fieldErr) Error() string { return e.path + ": " + e.msg }

func fieldError(path, msg string) error { return &fieldErr{path, msg} }
