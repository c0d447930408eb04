package controller

import (
	"fmt"

	mspec "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// apiServerSecret is one Secret reference of the API server's typed
// security settings: the provider's reference, the machine spec field
// path it fills, and (once the spec is built) the SecretSource its value
// goes into.
type apiServerSecret struct {
	path string
	ref  **bootstrapv1.SecretValueSource
	dst  *mspec.SecretSource
}

// apiServerSecrets lists the Secret references of in (audit and
// authentication webhook kubeconfigs, encryption keys, authorization
// webhook kubeconfigs) in one order, each with its machine spec path; with
// out (the machine spec's copy of in, same indices) each also names the
// SecretSource the value fills.
func apiServerSecrets(in *bootstrapv1.APIServer, out *mspec.APIServer) []apiServerSecret {
	const p = "spec.controlPlane.apiServer"
	var list []apiServerSecret
	if a := in.Audit; a != nil && a.Webhook != nil {
		s := apiServerSecret{path: p + ".audit.webhook.kubeConfigFrom", ref: &a.Webhook.KubeConfigFrom}
		if out != nil {
			s.dst = &out.Audit.Webhook.KubeConfig
		}
		list = append(list, s)
	}
	if e := in.Encryption; e != nil {
		for i, r := range e.Resources {
			for j, pr := range r.Providers {
				for _, k := range []struct {
					name string
					keys *bootstrapv1.EncryptionKeys
					dst  func() *mspec.EncryptionKeys
				}{
					{"aesgcm", pr.AESGCM, func() *mspec.EncryptionKeys { return out.Encryption.Resources[i].Providers[j].AESGCM }},
					{"aescbc", pr.AESCBC, func() *mspec.EncryptionKeys { return out.Encryption.Resources[i].Providers[j].AESCBC }},
					{"secretbox", pr.Secretbox, func() *mspec.EncryptionKeys { return out.Encryption.Resources[i].Providers[j].Secretbox }},
				} {
					if k.keys == nil {
						continue
					}
					for n := range k.keys.Keys {
						s := apiServerSecret{path: fmt.Sprintf("%s.encryption.resources[%d].providers[%d].%s.keys[%d].secretFrom", p, i, j, k.name, n), ref: &k.keys.Keys[n].SecretFrom}
						if out != nil {
							s.dst = &k.dst().Keys[n].Secret
						}
						list = append(list, s)
					}
				}
			}
		}
	}
	if a := in.Authentication; a != nil && a.Webhook != nil {
		s := apiServerSecret{path: p + ".authentication.webhook.kubeConfigFrom", ref: &a.Webhook.KubeConfigFrom}
		if out != nil {
			s.dst = &out.Authentication.Webhook.KubeConfig
		}
		list = append(list, s)
	}
	if a := in.Authorization; a != nil {
		for i, z := range a.Authorizers {
			if z.Webhook == nil {
				continue
			}
			s := apiServerSecret{path: fmt.Sprintf("%s.authorization.authorizers[%d].webhook.kubeConfigFrom", p, i), ref: &a.Authorizers[i].Webhook.KubeConfigFrom}
			if out != nil {
				s.dst = &out.Authorization.Authorizers[i].Webhook.KubeConfig
			}
			list = append(list, s)
		}
	}
	return list
}

// readAPIServerRefs reads the values of the API server's Secret
// references (apiServerSecrets), by the reference's field path.
func readAPIServerRefs(r *secretReader, cp *bootstrapv1.ControlPlaneSpec, out *refValues) error {
	if cp == nil {
		return nil
	}
	for _, s := range apiServerSecrets(&cp.APIServer, nil) {
		ref := *s.ref
		if ref == nil {
			return fieldError(s.path, "required: a Secret key")
		}
		v, err := r.nonBlankKey(ref.Secret.Name, ref.Secret.Key, s.path+".secret")
		if err != nil {
			return err
		}
		if out.apiServer == nil {
			out.apiServer = map[string][]byte{}
		}
		out.apiServer[s.path] = v
		out.known = append(out.known, v)
	}
	return nil
}

// apiServerWithoutRefs returns a copy of a without its Secret references,
// which have no machine spec counterpart (applyAPIServerRefs fills their
// values in).
func apiServerWithoutRefs(a bootstrapv1.APIServer) bootstrapv1.APIServer {
	a = *a.DeepCopy()
	for _, s := range apiServerSecrets(&a, nil) {
		*s.ref = nil
	}
	return a
}

// applyAPIServerRefs puts the values read by readAPIServerRefs inline
// into the machine spec's API server settings out (copied from in), where
// the Sealer seals them.
func applyAPIServerRefs(refs *refValues, in *bootstrapv1.APIServer, out *mspec.APIServer) error {
	for _, s := range apiServerSecrets(in, out) {
		if *s.ref == nil {
			continue // none given (readAPIServerRefs refuses that)
		}
		if refs == nil {
			return fmt.Errorf("%s: the Secret was not read", s.path)
		}
		v, ok := refs.apiServer[s.path]
		if !ok {
			return fmt.Errorf("%s: the Secret was not read", s.path)
		}
		*s.dst = mspec.SecretSource{Value: string(v)}
	}
	return nil
}

// securitySpec copies the config's compliance profile into the machine
// spec and refuses a control-plane Machine under a profile without
// encryption at rest: every control plane of the Cluster must encrypt
// with the same key, which the agent cannot make alone and Cluster API's
// CA Secrets do not carry, so it must come from a Secret the config names
// (spec.controlPlane.apiServer.encryption).
func securitySpec(cfg *bootstrapv1.MachineadmConfig, sp *mspec.MachineBootstrapSpec, controlPlane bool) error {
	if cfg.Spec.Security == nil {
		return nil
	}
	if err := strictCopy("spec.security", cfg.Spec.Security, &sp.Security); err != nil {
		return err
	}
	if sp.Security == nil || sp.Security.Profile == "" || !controlPlane {
		return nil
	}
	if cp := cfg.Spec.ControlPlane; cp == nil || cp.APIServer.Encryption == nil {
		return fieldError("spec.controlPlane.apiServer.encryption", fmt.Sprintf(
			"required on a control-plane Machine under spec.security.profile %s: every control plane of the Cluster encrypts Secrets at rest with the same key; "+
				"put one (`machineadm pki encryption-key`) in a Secret and name it in an aescbc provider's keys[].secretFrom", sp.Security.Profile))
	}
	return nil
}
