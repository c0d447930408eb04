package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The compliance profile and the API server's typed security settings
// (machine spec types_profile.go and types_security.go; docs/compliance.md,
// docs/apiserver-security.md). Where the machine spec holds a secret in a
// SecretSource (encryption keys, webhook kubeconfigs), the provider takes
// a reference to a key of a Secret in the config's namespace (…From); the
// controller reads it and seals its value to the config's recipients,
// like every other secret it renders. The machine's agent validates the
// whole spec again with the upstream types.

// Security is the compliance profile of the Machine (machine spec field
// spec.security).
type Security struct {
	// Profile is the benchmark: "cis-1.12" (CIS Kubernetes Benchmark
	// v1.12.0) or "stig" (DISA Kubernetes STIG Version 2, Release 2). It
	// changes defaults, hardens the files kubeadm wrote and records each
	// check's verdict in the outcome (status.outcome.compliance). A
	// control-plane Machine under a profile needs
	// controlPlane.apiServer.encryption (every control plane of the
	// Cluster encrypts with the same key, held in a Secret). Linux only.
	// +optional
	// +kubebuilder:validation:Enum=cis-1.12;stig
	Profile string `json:"profile,omitempty"`
	// Waivers excuse checks of the profile, each with its reason; each ID
	// at most once.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=id
	Waivers []Waiver `json:"waivers,omitempty"`
}

// Waiver excuses one check of the profile.
type Waiver struct {
	// ID is the check's benchmark identifier: "1.2.5" (cis-1.12),
	// "V-242390" (stig).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)+|V-[0-9]+)$`
	ID string `json:"id"`
	// Reason says why the check does not apply or is accepted: one line
	// (no control character, C1 ones such as U+0085 too, and no U+2028 or
	// U+2029), at most 1024 characters, with a visible one (not only
	// spaces of any kind or zero-width characters), as the agent checks.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[^\p{Cc}\p{Zl}\p{Zp}]*[^\p{Cc}\p{Z}\p{Cf}][^\p{Cc}\p{Zl}\p{Zp}]*$`
	Reason string `json:"reason"`
}

// HostPathMount is a host path mounted into a static-pod control-plane
// component (kubeadm HostPathMount; runtime StaticPods only). A hostPath
// of /, /run or /var/run, or in /proc, /sys, /dev or /var/lib/kubelet, or
// in a daemon's socket directory of /run or /var/run (containerd, crio,
// docker, docker.sock, cri-dockerd.sock, systemd, dbus), is refused: the
// pod would get the host itself (/proc/1/root is the host's root, the
// container runtime's socket runs any container). A hostPath
// must be clean (no "//", "." or ".." segment, no trailing "/"), so
// another spelling of a refused path cannot pass.
// +kubebuilder:validation:XValidation:rule="!self.hostPath.matches('(^|/)[.][.]?(/|$)')",message="must be a clean path: no \".\" or \"..\" segment",fieldPath=".hostPath"
// +kubebuilder:validation:XValidation:rule="!(self.hostPath in ['/', '/run', '/var/run']) && !self.hostPath.matches('^/(proc|sys|dev|var/lib/kubelet)(/|$)') && !self.hostPath.matches('^/(var/)?run/(containerd|crio|docker|docker[.]sock|cri-dockerd[.]sock|systemd|dbus)(/|$)')",message="would hand the component the host itself: mount the directory the files are in",fieldPath=".hostPath"
type HostPathMount struct {
	// Name of the volume: a DNS-1123 label, not one kubeadm or machineadm
	// uses.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// HostPath is the absolute, clean path on the host.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/([^/\x00-\x1f\x7f]+(/[^/\x00-\x1f\x7f]+)*)?$`
	HostPath string `json:"hostPath"`
	// MountPath is the absolute path in the container.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*$`
	MountPath string `json:"mountPath"`
	// ReadOnly mounts the path read-only.
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`
	// PathType is the core/v1 HostPathType. Default "" (no check).
	// +optional
	// +kubebuilder:validation:Enum="";DirectoryOrCreate;Directory;FileOrCreate;File;Socket;CharDevice;BlockDevice
	PathType string `json:"pathType,omitempty"`
}

// Audit is the API server's audit logging (machine spec Audit).
type Audit struct {
	// Policy is the audit policy: the fields of an audit.k8s.io/v1 Policy
	// (rules, omitStages, omitManagedFields), validated with the upstream
	// types. Required.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Policy *apiextensionsv1.JSON `json:"policy"`
	// Log is the log-file backend. Default (without Webhook): a log at
	// /var/log/kubernetes/audit/audit.log.
	// +optional
	Log *AuditLog `json:"log,omitempty"`
	// Webhook is the webhook backend.
	// +optional
	Webhook *AuditWebhook `json:"webhook,omitempty"`
}

// AuditLog is the audit log-file backend.
type AuditLog struct {
	// Path is the absolute path of the log file, in a directory of its
	// own. Default "/var/log/kubernetes/audit/audit.log".
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*[^/]$`
	Path string `json:"path,omitempty"`
	// MaxAge is the number of days a rotated file is kept. Default 30.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxAge *int32 `json:"maxAge,omitempty"`
	// MaxSize is the size in megabytes at which the file is rotated.
	// Default 100.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxSize *int32 `json:"maxSize,omitempty"`
	// MaxBackups is the number of rotated files kept. Default 10.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxBackups *int32 `json:"maxBackups,omitempty"`
}

// AuditWebhook is the audit webhook backend.
type AuditWebhook struct {
	// KubeConfigFrom is the Secret key holding the webhook's kubeconfig;
	// sealed.
	// +kubebuilder:validation:Required
	KubeConfigFrom *SecretValueSource `json:"kubeConfigFrom,omitempty"`
	// Mode is "batch" (default), "blocking" or "blocking-strict".
	// +optional
	// +kubebuilder:validation:Enum=batch;blocking;blocking-strict
	Mode string `json:"mode,omitempty"`
}

// Encryption is the API server's encryption at rest (machine spec
// Encryption): an EncryptionConfiguration whose keys come from Secrets.
// Give every control-plane Machine of a Cluster the same keys.
type Encryption struct {
	// Resources lists resources and their providers.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Resources []EncryptionResource `json:"resources"`
}

// EncryptionResource is one entry of an EncryptionConfiguration.
type EncryptionResource struct {
	// Resources are resource names ("secrets", "*.apps").
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	Resources []string `json:"resources"`
	// Providers encrypt the resources: the first writes, each can read.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Providers []EncryptionProvider `json:"providers"`
}

// EncryptionProvider is one provider: exactly one field is set.
// +kubebuilder:validation:XValidation:rule="[has(self.aesgcm), has(self.aescbc), has(self.secretbox), has(self.identity), has(self.kms)].filter(x, x).size() == 1",message="exactly one of aesgcm, aescbc, secretbox, identity and kms"
type EncryptionProvider struct {
	// AESGCM is the aesgcm provider.
	// +optional
	AESGCM *EncryptionKeys `json:"aesgcm,omitempty"`
	// AESCBC is the aescbc provider.
	// +optional
	AESCBC *EncryptionKeys `json:"aescbc,omitempty"`
	// Secretbox is the secretbox provider.
	// +optional
	Secretbox *EncryptionKeys `json:"secretbox,omitempty"`
	// Identity is the identity provider (no encryption): {}.
	// +optional
	Identity *IdentityProvider `json:"identity,omitempty"`
	// KMS is a KMS v2 envelope provider.
	// +optional
	KMS *KMSProvider `json:"kms,omitempty"`
}

// EncryptionKeys are the keys of an aesgcm, aescbc or secretbox provider.
type EncryptionKeys struct {
	// Keys, the first encrypts.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Keys []EncryptionKey `json:"keys"`
}

// EncryptionKey is one named key.
type EncryptionKey struct {
	// Name of the key, stored with the data it encrypts.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// SecretFrom is the Secret key holding the key, base64-encoded, of the
	// length the provider needs (`machineadm pki encryption-key`); sealed.
	// +kubebuilder:validation:Required
	SecretFrom *SecretValueSource `json:"secretFrom,omitempty"`
}

// IdentityProvider is the identity provider's (empty) configuration.
type IdentityProvider struct{}

// KMSProvider is a KMS v2 envelope provider.
type KMSProvider struct {
	// APIVersion of the KMS plugin API: "v2" (default and only value).
	// +optional
	// +kubebuilder:validation:Enum=v2
	APIVersion string `json:"apiVersion,omitempty"`
	// Name of the plugin.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Endpoint is "unix:///absolute/path.sock", in a directory of its own.
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^unix:///[^\x00-\x1f\x7f]+$`
	Endpoint string `json:"endpoint"`
	// Timeout of a plugin call, a Go duration. Default "3s".
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	Timeout string `json:"timeout,omitempty"`
}

// Authentication configures the API server's authenticators beyond
// kubeadm's client certificates and tokens (machine spec Authentication).
type Authentication struct {
	// JWT are JWT authenticators, each the fields of an upstream
	// JWTAuthenticator, validated with the upstream validation.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Type=object
	JWT []apiextensionsv1.JSON `json:"jwt,omitempty"`
	// Anonymous configures anonymous requests.
	// +optional
	Anonymous *AnonymousAuthentication `json:"anonymous,omitempty"`
	// Webhook is a token-review webhook authenticator.
	// +optional
	Webhook *AuthenticationWebhook `json:"webhook,omitempty"`
}

// AnonymousAuthentication configures anonymous requests.
type AnonymousAuthentication struct {
	// Enabled allows anonymous requests.
	Enabled bool `json:"enabled"`
	// Conditions, when set, allow anonymous requests only on these paths.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Conditions []AnonymousCondition `json:"conditions,omitempty"`
}

// AnonymousCondition is one path anonymous requests may reach.
type AnonymousCondition struct {
	// Path of the request, for example "/livez".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path"`
}

// AuthenticationWebhook is a token-review webhook authenticator.
type AuthenticationWebhook struct {
	// KubeConfigFrom is the Secret key holding the webhook's kubeconfig;
	// sealed.
	// +kubebuilder:validation:Required
	KubeConfigFrom *SecretValueSource `json:"kubeConfigFrom,omitempty"`
	// Version of the TokenReview API sent: "v1" (default) or "v1beta1".
	// +optional
	// +kubebuilder:validation:Enum=v1;v1beta1
	Version string `json:"version,omitempty"`
	// CacheTTL is how long answers are cached, a Go duration. Default "2m".
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	CacheTTL string `json:"cacheTTL,omitempty"`
}

// Authorization is the API server's authorizer chain (machine spec
// Authorization); it must include Node and RBAC.
type Authorization struct {
	// Authorizers in the order they are asked.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Authorizers []Authorizer `json:"authorizers"`
}

// Authorizer is one authorizer.
// +kubebuilder:validation:XValidation:rule="has(self.webhook) == (self.type == 'Webhook')",message="webhook is required for type Webhook and refused for the others"
type Authorizer struct {
	// Type of the authorizer.
	// +kubebuilder:validation:Enum=Node;RBAC;Webhook;ABAC;AlwaysAllow;AlwaysDeny
	Type string `json:"type"`
	// Name identifies the authorizer; default the type in lower case,
	// required for webhooks.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// Webhook configures a Webhook authorizer.
	// +optional
	Webhook *AuthorizationWebhook `json:"webhook,omitempty"`
}

// AuthorizationWebhook is a Webhook authorizer.
type AuthorizationWebhook struct {
	// KubeConfigFrom is the Secret key holding the webhook's kubeconfig;
	// sealed.
	// +kubebuilder:validation:Required
	KubeConfigFrom *SecretValueSource `json:"kubeConfigFrom,omitempty"`
	// Timeout of a request, at most "30s".
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	Timeout string `json:"timeout"`
	// SubjectAccessReviewVersion sent: "v1" or "v1beta1".
	// +kubebuilder:validation:Enum=v1;v1beta1
	SubjectAccessReviewVersion string `json:"subjectAccessReviewVersion"`
	// MatchConditionSubjectAccessReviewVersion the match conditions see:
	// "v1".
	// +kubebuilder:validation:Enum=v1
	MatchConditionSubjectAccessReviewVersion string `json:"matchConditionSubjectAccessReviewVersion"`
	// FailurePolicy when the webhook fails: "NoOpinion" or "Deny".
	// +kubebuilder:validation:Enum=NoOpinion;Deny
	FailurePolicy string `json:"failurePolicy"`
	// AuthorizedTTL caches allowed answers. Default "5m".
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	AuthorizedTTL string `json:"authorizedTTL,omitempty"`
	// UnauthorizedTTL caches denied answers. Default "30s".
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	UnauthorizedTTL string `json:"unauthorizedTTL,omitempty"`
	// CacheAuthorizedRequests caches allowed answers. Default true.
	// +optional
	CacheAuthorizedRequests *bool `json:"cacheAuthorizedRequests,omitempty"`
	// CacheUnauthorizedRequests caches denied answers. Default true.
	// +optional
	CacheUnauthorizedRequests *bool `json:"cacheUnauthorizedRequests,omitempty"`
	// MatchConditions are CEL expressions that must all be true for the
	// webhook to be asked.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	MatchConditions []WebhookMatchCondition `json:"matchConditions,omitempty"`
}

// WebhookMatchCondition is a CEL expression over the SubjectAccessReview.
type WebhookMatchCondition struct {
	// Expression is the CEL expression, of type bool.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`
}
