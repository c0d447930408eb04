package apiserverconfig

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// SecretReader returns the resolved value of the secret src at the spec
// field path field (its file read, or its inline value).
type SecretReader func(field string, src *machineadm.SecretSource) ([]byte, error)

// File is one file machineadm writes for the API server.
type File struct {
	// Path is the absolute machine path.
	Path string
	// Field is the spec field the file comes from, for messages.
	Field string
	// Content is the file's content.
	Content []byte
	// Secret says the content holds a secret (keys, kubeconfigs): it is
	// never shown in a diff or a dry run.
	Secret bool
}

// apiServerPath is the field path of spec.controlPlane.apiServer.
var apiServerPath = field.NewPath("spec", "controlPlane", "apiServer")

// Files returns the files of a's typed settings (a defaulted, validated
// spec), reading secrets through read. Errors name the field; they never
// quote a secret.
func Files(a *machineadm.APIServer, read SecretReader) ([]File, error) {
	var out []File
	if au := a.Audit; au != nil {
		p := apiServerPath.Child("audit")
		b, errs := policyYAML(au.Policy, p.Child("policy"))
		if len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		out = append(out, File{Path: AuditPolicyFile, Field: p.Child("policy").String(), Content: b})
		if w := au.Webhook; w != nil {
			f := p.Child("webhook", "kubeConfig").String()
			kc, err := read(f, &w.KubeConfig)
			if err != nil {
				return nil, err
			}
			out = append(out, File{Path: AuditWebhookKubeConfigFile, Field: f, Content: kc, Secret: true})
		}
	}
	if e := a.Encryption; e != nil {
		ec, err := encryptionConfig(e, func(f string, src *machineadm.SecretSource) (string, error) {
			b, err := read(f, src)
			return strings.TrimSpace(string(b)), err
		})
		if err != nil {
			return nil, err
		}
		if errs := ValidateEncryption(ec, apiServerPath.Child("encryption")); len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		b, err := yaml.Marshal(ec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", apiServerPath.Child("encryption"), err)
		}
		out = append(out, File{Path: EncryptionConfigFile, Field: apiServerPath.Child("encryption").String(), Content: b, Secret: true})
	}
	if au := a.Authentication; au != nil {
		p := apiServerPath.Child("authentication")
		if authenticationConfigured(au) {
			ac, errs := authenticationConfig(au, p)
			if len(errs) > 0 {
				return nil, errs.ToAggregate()
			}
			b, err := yaml.Marshal(ac)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			out = append(out, File{Path: AuthenticationConfigFile, Field: p.String(), Content: b})
		}
		if w := au.Webhook; w != nil {
			f := p.Child("webhook", "kubeConfig").String()
			kc, err := read(f, &w.KubeConfig)
			if err != nil {
				return nil, err
			}
			out = append(out, File{Path: AuthenticationWebhookKubeConfigFile, Field: f, Content: kc, Secret: true})
		}
	}
	if az := a.Authorization; az != nil {
		p := apiServerPath.Child("authorization")
		ac, errs := authorizationConfig(az, p)
		if len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		b, err := yaml.Marshal(ac)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, File{Path: AuthorizationConfigFile, Field: p.String(), Content: b})
		for i, z := range az.Authorizers {
			if z.Webhook == nil {
				continue
			}
			f := p.Child("authorizers").Index(i).Child("webhook", "kubeConfig").String()
			kc, err := read(f, &z.Webhook.KubeConfig)
			if err != nil {
				return nil, err
			}
			out = append(out, File{Path: AuthorizationWebhookKubeConfigFile(z.Name), Field: f, Content: kc, Secret: true})
		}
	}
	return out, nil
}

// policyYAML decodes the policy map strictly as an audit.k8s.io/v1
// Policy, validates it upstream's way and returns it as YAML, apiVersion
// and kind included.
func policyYAML(policy map[string]any, p *field.Path) ([]byte, field.ErrorList) {
	pol, errs := decodePolicy(policy, p)
	if len(errs) > 0 {
		return nil, errs
	}
	if errs := validatePolicy(pol, p); len(errs) > 0 {
		return nil, errs
	}
	m := make(map[string]any, len(policy)+2)
	for k, v := range policy {
		m[k] = v
	}
	m["apiVersion"], m["kind"] = auditv1.SchemeGroupVersion.String(), "Policy"
	b, err := yaml.Marshal(m)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(p, "", err.Error())}
	}
	return b, nil
}

// decodePolicy decodes the policy map strictly into an audit.k8s.io/v1
// Policy.
func decodePolicy(policy map[string]any, p *field.Path) (*auditv1.Policy, field.ErrorList) {
	if len(policy) == 0 {
		return nil, field.ErrorList{field.Required(p, "an audit.k8s.io/v1 Policy with at least one rule")}
	}
	var errs field.ErrorList
	if v, ok := policy["apiVersion"]; ok && v != auditv1.SchemeGroupVersion.String() {
		errs = append(errs, field.NotSupported(p.Child("apiVersion"), v, []string{auditv1.SchemeGroupVersion.String()}))
	}
	if v, ok := policy["kind"]; ok && v != "Policy" {
		errs = append(errs, field.NotSupported(p.Child("kind"), v, []string{"Policy"}))
	}
	var pol auditv1.Policy
	errs = append(errs, strictDecode(policy, &pol, p)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return &pol, nil
}

// strictDecode decodes v (a spec map) into out by its JSON form: unknown
// fields, duplicates and wrong types are errors under p.
func strictDecode(v any, out any, p *field.Path) field.ErrorList {
	data, err := json.Marshal(v)
	if err != nil {
		return field.ErrorList{field.Invalid(p, "", err.Error())}
	}
	strict, err := sigsjson.UnmarshalStrict(data, out)
	if err != nil {
		return field.ErrorList{field.Invalid(p, "", "does not decode: "+err.Error())}
	}
	var errs field.ErrorList
	for _, e := range strict {
		errs = append(errs, field.Invalid(p, "", e.Error()))
	}
	return errs
}

// encryptionConfig builds the EncryptionConfiguration of e with each
// key's secret from key.
func encryptionConfig(e *machineadm.Encryption, key func(field string, src *machineadm.SecretSource) (string, error)) (*apiserverv1.EncryptionConfiguration, error) {
	p := apiServerPath.Child("encryption")
	ec := &apiserverv1.EncryptionConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1.SchemeGroupVersion.String(), Kind: "EncryptionConfiguration"},
	}
	for i, r := range e.Resources {
		rp := p.Child("resources").Index(i)
		rc := apiserverv1.ResourceConfiguration{Resources: r.Resources}
		for j, pr := range r.Providers {
			pp := rp.Child("providers").Index(j)
			var pc apiserverv1.ProviderConfiguration
			keys := func(name string, ks *machineadm.EncryptionKeys) ([]apiserverv1.Key, error) {
				var out []apiserverv1.Key
				for k, kk := range ks.Keys {
					kp := pp.Child(name, "keys").Index(k).Child("secret")
					s, err := key(kp.String(), &kk.Secret)
					if err != nil {
						return nil, err
					}
					out = append(out, apiserverv1.Key{Name: kk.Name, Secret: s})
				}
				return out, nil
			}
			var err error
			if pr.AESGCM != nil {
				pc.AESGCM = &apiserverv1.AESConfiguration{}
				if pc.AESGCM.Keys, err = keys("aesgcm", pr.AESGCM); err != nil {
					return nil, err
				}
			}
			if pr.AESCBC != nil {
				pc.AESCBC = &apiserverv1.AESConfiguration{}
				if pc.AESCBC.Keys, err = keys("aescbc", pr.AESCBC); err != nil {
					return nil, err
				}
			}
			if pr.Secretbox != nil {
				pc.Secretbox = &apiserverv1.SecretboxConfiguration{}
				if pc.Secretbox.Keys, err = keys("secretbox", pr.Secretbox); err != nil {
					return nil, err
				}
			}
			if pr.Identity != nil {
				pc.Identity = &apiserverv1.IdentityConfiguration{}
			}
			if k := pr.KMS; k != nil {
				pc.KMS = &apiserverv1.KMSConfiguration{APIVersion: k.APIVersion, Name: k.Name, Endpoint: k.Endpoint}
				if k.Timeout != "" {
					d, err := time.ParseDuration(k.Timeout)
					if err != nil {
						return nil, field.Invalid(pp.Child("kms", "timeout"), k.Timeout, "must be a duration such as 3s")
					}
					pc.KMS.Timeout = &metav1.Duration{Duration: d}
				}
			}
			rc.Providers = append(rc.Providers, pc)
		}
		ec.Resources = append(ec.Resources, rc)
	}
	return ec, nil
}

// authenticationConfig builds the AuthenticationConfiguration of a.
func authenticationConfig(a *machineadm.Authentication, p *field.Path) (*apiserverv1.AuthenticationConfiguration, field.ErrorList) {
	ac := &apiserverv1.AuthenticationConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1.SchemeGroupVersion.String(), Kind: "AuthenticationConfiguration"},
		JWT:      []apiserverv1.JWTAuthenticator{},
	}
	var errs field.ErrorList
	for i, j := range a.JWT {
		var ja apiserverv1.JWTAuthenticator
		if e := strictDecode(j, &ja, p.Child("jwt").Index(i)); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		ac.JWT = append(ac.JWT, ja)
	}
	if an := a.Anonymous; an != nil {
		ac.Anonymous = &apiserverv1.AnonymousAuthConfig{Enabled: an.Enabled}
		for _, c := range an.Conditions {
			ac.Anonymous.Conditions = append(ac.Anonymous.Conditions, apiserverv1.AnonymousAuthCondition{Path: c.Path})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if errs := validateAuthentication(ac, p); len(errs) > 0 {
		return nil, errs
	}
	return ac, nil
}

// authorizationConfig builds the AuthorizationConfiguration of a, each
// webhook's connection a kubeconfig file.
func authorizationConfig(a *machineadm.Authorization, p *field.Path) (*apiserverv1.AuthorizationConfiguration, field.ErrorList) {
	ac := &apiserverv1.AuthorizationConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1.SchemeGroupVersion.String(), Kind: "AuthorizationConfiguration"},
	}
	var errs field.ErrorList
	for i, z := range a.Authorizers {
		zp := p.Child("authorizers").Index(i)
		c := apiserverv1.AuthorizerConfiguration{Type: z.Type, Name: z.Name}
		if w := z.Webhook; w != nil {
			wp := zp.Child("webhook")
			file := AuthorizationWebhookKubeConfigFile(z.Name)
			wc := &apiserverv1.WebhookConfiguration{
				CacheAuthorizedRequests:                  w.CacheAuthorizedRequests,
				CacheUnauthorizedRequests:                w.CacheUnauthorizedRequests,
				SubjectAccessReviewVersion:               w.SubjectAccessReviewVersion,
				MatchConditionSubjectAccessReviewVersion: w.MatchConditionSubjectAccessReviewVersion,
				FailurePolicy:                            w.FailurePolicy,
				ConnectionInfo: apiserverv1.WebhookConnectionInfo{
					Type: apiserverv1.AuthorizationWebhookConnectionInfoTypeKubeConfigFile, KubeConfigFile: &file},
				MatchConditions: []apiserverv1.WebhookMatchCondition{},
			}
			for _, d := range []struct {
				v, name, def string
				out          *metav1.Duration
			}{
				{w.Timeout, "timeout", "", &wc.Timeout},
				{w.AuthorizedTTL, "authorizedTTL", "5m", &wc.AuthorizedTTL},
				{w.UnauthorizedTTL, "unauthorizedTTL", "30s", &wc.UnauthorizedTTL},
			} {
				v := d.v
				if v == "" {
					v = d.def
				}
				if v == "" {
					continue // upstream validation says it is required
				}
				dur, err := time.ParseDuration(v)
				if err != nil {
					errs = append(errs, field.Invalid(wp.Child(d.name), d.v, "must be a duration such as 30s or 5m"))
					continue
				}
				*d.out = metav1.Duration{Duration: dur}
			}
			for _, m := range w.MatchConditions {
				wc.MatchConditions = append(wc.MatchConditions, apiserverv1.WebhookMatchCondition{Expression: m.Expression})
			}
			c.Webhook = wc
		}
		ac.Authorizers = append(ac.Authorizers, c)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if errs := validateAuthorization(ac, p); len(errs) > 0 {
		return nil, errs
	}
	return ac, nil
}
