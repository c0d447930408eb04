package apiserverconfig

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/apiserver"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/apis/audit"
	auditinstall "k8s.io/apiserver/pkg/apis/audit/install"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	auditvalidation "k8s.io/apiserver/pkg/apis/audit/validation"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	authorizationcel "k8s.io/apiserver/pkg/authorization/cel"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// AuthorizerTypes are the authorizer types kube-apiserver accepts in an
// AuthorizationConfiguration (its --authorization-mode values); Webhook is
// the only one that may repeat.
var AuthorizerTypes = []string{"ABAC", "AlwaysAllow", "AlwaysDeny", "Node", "RBAC", "Webhook"}

var (
	schemeOnce sync.Once
	scheme     *runtime.Scheme
)

// upstreamScheme has the apiserver.config.k8s.io and audit.k8s.io types,
// internal and v1, with their conversions and defaults.
func upstreamScheme() *runtime.Scheme {
	schemeOnce.Do(func() {
		scheme = runtime.NewScheme()
		apiserverinstall.Install(scheme)
		auditinstall.Install(scheme)
	})
	return scheme
}

// under moves upstream's errors, whose paths start at the configuration's
// root ("resources[0]…", "jwt[0]…"), under the spec path p.
func under(p *field.Path, errs field.ErrorList) field.ErrorList {
	for _, e := range errs {
		if e.Field == "" || e.Field == "<nil>" {
			e.Field = p.String()
		} else {
			e.Field = p.String() + "." + e.Field
		}
	}
	return errs
}

func convert(in, out any, p *field.Path) field.ErrorList {
	s := upstreamScheme()
	if obj, ok := in.(runtime.Object); ok {
		s.Default(obj)
	}
	if err := s.Convert(in, out, nil); err != nil {
		return field.ErrorList{field.Invalid(p, "", "does not convert: "+err.Error())}
	}
	return nil
}

// validatePolicy validates pol with the audit API's own validation.
func validatePolicy(pol *auditv1.Policy, p *field.Path) field.ErrorList {
	var in audit.Policy
	if errs := convert(pol.DeepCopy(), &in, p); len(errs) > 0 {
		return errs
	}
	errs := under(p, auditvalidation.ValidatePolicy(&in))
	if len(in.Rules) == 0 {
		errs = append(errs, field.Required(p.Child("rules"), "at least one rule: a policy without rules logs nothing"))
	}
	return errs
}

// ValidatePolicy decodes and validates an audit policy given as the
// spec's map, with errors under p.
func ValidatePolicy(policy map[string]any, p *field.Path) field.ErrorList {
	_, errs := policyYAML(policy, p)
	return errs
}

// ValidateEncryption validates ec with the API server's own validation
// (which never quotes a key), errors under p.
func ValidateEncryption(ec *apiserverv1.EncryptionConfiguration, p *field.Path) field.ErrorList {
	var in apiserver.EncryptionConfiguration
	if errs := convert(ec.DeepCopy(), &in, p); len(errs) > 0 {
		return errs
	}
	return under(p, apiservervalidation.ValidateEncryptionConfiguration(&in, false))
}

// ValidateEncryptionShape validates e with a stand-in key of the right
// length for every key given as a file (its content is checked when the
// file is read, on the machine), and the inline keys themselves.
func ValidateEncryptionShape(e *machineadm.Encryption, p *field.Path) field.ErrorList {
	ec, err := encryptionConfig(e, func(_ string, src *machineadm.SecretSource) (string, error) {
		if src.File != "" || src.Value == "" {
			// 32 zero bytes: a length every provider accepts.
			return "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", nil
		}
		return src.Value, nil
	})
	if err != nil {
		if fe, ok := err.(*field.Error); ok {
			return field.ErrorList{fe}
		}
		return field.ErrorList{field.Invalid(p, "", err.Error())}
	}
	return ValidateEncryption(ec, p)
}

// validateAuthentication validates ac with the API server's own
// validation (CEL expressions compiled), errors under p.
func validateAuthentication(ac *apiserverv1.AuthenticationConfiguration, p *field.Path) field.ErrorList {
	var in apiserver.AuthenticationConfiguration
	if errs := convert(ac.DeepCopy(), &in, p); len(errs) > 0 {
		return errs
	}
	return under(p, apiservervalidation.ValidateAuthenticationConfiguration(authenticationcel.NewDefaultCompiler(), &in, nil))
}

// ValidateAuthentication builds and validates a's AuthenticationConfiguration.
func ValidateAuthentication(a *machineadm.Authentication, p *field.Path) field.ErrorList {
	if !authenticationConfigured(a) {
		return nil
	}
	_, errs := authenticationConfig(a, p)
	return errs
}

// validateAuthorization validates ac with the API server's own
// validation, errors under p (upstream's paths start at "authorizers").
func validateAuthorization(ac *apiserverv1.AuthorizationConfiguration, p *field.Path) field.ErrorList {
	var in apiserver.AuthorizationConfiguration
	if errs := convert(ac.DeepCopy(), &in, p); len(errs) > 0 {
		return errs
	}
	errs := apiservervalidation.ValidateAuthorizationConfiguration(authorizationcel.NewDefaultCompiler(), p, &in,
		sets.New(AuthorizerTypes...), sets.New("Webhook"))
	// Upstream also stats each webhook's kubeconfig file. machineadm
	// writes that file itself from the spec's kubeConfig secret, after
	// validation, so the host is not asked here.
	return slices.DeleteFunc(errs, func(e *field.Error) bool {
		return strings.HasSuffix(e.Field, ".connectionInfo.kubeConfigFile")
	})
}

// ValidateAuthorization builds and validates a's AuthorizationConfiguration.
func ValidateAuthorization(a *machineadm.Authorization, p *field.Path) field.ErrorList {
	_, errs := authorizationConfig(a, p)
	return errs
}
