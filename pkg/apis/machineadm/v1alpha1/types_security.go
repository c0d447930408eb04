package v1alpha1

// Security settings of the API server (spec.controlPlane.apiServer.audit,
// .encryption, .authentication, .authorization) and the host paths a
// static-pod component mounts (extraVolumes). Names follow the upstream
// configuration APIs (audit.k8s.io/v1 Policy, apiserver.config.k8s.io/v1
// EncryptionConfiguration, AuthenticationConfiguration and
// AuthorizationConfiguration, kubeadm's HostPathMount); where upstream holds
// a secret in a file path or an inline string (encryption keys, webhook
// kubeconfigs), the spec holds a SecretSource, so that keys can be given
// as files on the machine or sealed like every other secret. machineadm
// writes each configuration into APIServerConfigDir, with the owner and
// mode the runtime needs (root 0600 for static pods, the API server's own
// account for the Systemd runtime), mounts it into the static pod
// read-only and adds the API server flag that reads it. A flag in
// apiServer.extraArgs that one of these fields sets is refused.

// Paths machineadm writes the API server's security configuration to.
const (
	// APIServerConfigDir holds the files machineadm writes for the API
	// server's typed security settings (policy, configurations,
	// kubeconfigs). Static pods mount it read-only.
	APIServerConfigDir = "/etc/kubernetes/apiserver"
	// DefaultAuditLogPath is the default audit log file
	// (spec.controlPlane.apiServer.audit.log.path).
	DefaultAuditLogPath = "/var/log/kubernetes/audit/audit.log"
	// DefaultAuditLogMaxAge is the default number of days an audit log
	// file is kept (--audit-log-maxage).
	DefaultAuditLogMaxAge = int32(30)
	// DefaultAuditLogMaxSize is the default size in megabytes at which the
	// audit log is rotated (--audit-log-maxsize).
	DefaultAuditLogMaxSize = int32(100)
	// DefaultAuditLogMaxBackups is the default number of rotated audit log
	// files kept (--audit-log-maxbackup).
	DefaultAuditLogMaxBackups = int32(10)
	// DefaultAuditWebhookMode is the default audit webhook backend mode
	// (--audit-webhook-mode).
	DefaultAuditWebhookMode = "batch"
	// DefaultKMSAPIVersion is the KMS provider API version machineadm
	// supports (KMS v1 is deprecated and off in the API server).
	DefaultKMSAPIVersion = "v2"
	// DefaultKMSTimeout is the default timeout of a KMS plugin call.
	DefaultKMSTimeout = "3s"
	// DefaultAuthenticationWebhookVersion is the default TokenReview
	// version of the authentication webhook
	// (--authentication-token-webhook-version).
	DefaultAuthenticationWebhookVersion = "v1"
	// DefaultAuthenticationWebhookCacheTTL is the default time the API
	// server caches webhook token authentications
	// (--authentication-token-webhook-cache-ttl).
	DefaultAuthenticationWebhookCacheTTL = "2m"
	// DefaultAuthorizedTTL is how long an authorization webhook's allowed
	// answers are cached by default (upstream's default).
	DefaultAuthorizedTTL = "5m"
	// DefaultUnauthorizedTTL is how long an authorization webhook's
	// denied answers are cached by default (upstream's default).
	DefaultUnauthorizedTTL = "30s"
)

// Audit configures the API server's audit logging
// (spec.controlPlane.apiServer.audit). At least one backend is on: Log
// defaults to a log file when Webhook is not set.
type Audit struct {
	// Policy is the audit policy: the fields of an audit.k8s.io/v1 Policy
	// (rules, omitStages, omitManagedFields); apiVersion and kind may be
	// given and must then be "audit.k8s.io/v1" and "Policy". Required, with
	// at least one rule. Decoded strictly and validated with the upstream
	// types (k8s.io/apiserver/pkg/apis/audit): unknown fields, unknown
	// levels and stages are errors. Written to
	// APIServerConfigDir/audit-policy.yaml. Flag: --audit-policy-file.
	Policy map[string]any `json:"policy"`
	// Log is the log-file backend. Default (when Webhook is not set): a log
	// at DefaultAuditLogPath with the default rotation.
	Log *AuditLog `json:"log,omitempty"`
	// Webhook is the webhook backend. Optional.
	Webhook *AuditWebhook `json:"webhook,omitempty"`
}

// AuditLog is the audit log-file backend. Flags: --audit-log-path,
// --audit-log-maxage, --audit-log-maxsize, --audit-log-maxbackup.
type AuditLog struct {
	// Path is the absolute path of the audit log file; its directory is
	// created (0700) and, with static pods, mounted read-write. Default
	// "/var/log/kubernetes/audit/audit.log".
	Path string `json:"path,omitempty"`
	// MaxAge is the number of days a rotated file is kept; 0 keeps them
	// regardless of age. Default 30.
	MaxAge *int32 `json:"maxAge,omitempty"`
	// MaxSize is the size in megabytes at which the file is rotated; 0
	// never rotates. Default 100.
	MaxSize *int32 `json:"maxSize,omitempty"`
	// MaxBackups is the number of rotated files kept; 0 keeps all. Default
	// 10.
	MaxBackups *int32 `json:"maxBackups,omitempty"`
}

// AuditWebhook is the audit webhook backend. Flags:
// --audit-webhook-config-file, --audit-webhook-mode.
type AuditWebhook struct {
	// KubeConfig is the kubeconfig that locates and authenticates to the
	// webhook (it may hold client keys or tokens). Secret: a file on the
	// machine or sealed. Written to
	// APIServerConfigDir/audit-webhook.kubeconfig. Required.
	KubeConfig SecretSource `json:"kubeConfig" secret:"kubeconfig"`
	// Mode is "batch" (default), "blocking" or "blocking-strict".
	Mode string `json:"mode,omitempty"`
}

// Encryption is the API server's encryption at rest: an
// apiserver.config.k8s.io/v1 EncryptionConfiguration whose keys are
// secret inputs (spec.controlPlane.apiServer.encryption). Written 0600 to
// APIServerConfigDir/encryption-config.yaml. Flag:
// --encryption-provider-config.
type Encryption struct {
	// Resources lists resources and the providers that encrypt them, in
	// upstream's order of precedence. Required, not empty.
	Resources []EncryptionResource `json:"resources"`
}

// EncryptionResource is one entry of an EncryptionConfiguration's
// resources (upstream ResourceConfiguration).
type EncryptionResource struct {
	// Resources are resource names ("secrets", "configmaps",
	// "pandas.awesome.bears.example", "*.*", "*.apps"). Required.
	Resources []string `json:"resources"`
	// Providers encrypt the resources: the first one writes, every one can
	// read. Required.
	Providers []EncryptionProvider `json:"providers"`
}

// EncryptionProvider is one provider of an EncryptionResource (upstream
// ProviderConfiguration): exactly one field is set.
type EncryptionProvider struct {
	// AESGCM is the aesgcm provider (keys of 16, 24 or 32 bytes).
	AESGCM *EncryptionKeys `json:"aesgcm,omitempty"`
	// AESCBC is the aescbc provider (keys of 16, 24 or 32 bytes).
	AESCBC *EncryptionKeys `json:"aescbc,omitempty"`
	// Secretbox is the secretbox provider (keys of 32 bytes).
	Secretbox *EncryptionKeys `json:"secretbox,omitempty"`
	// Identity is the identity provider (no encryption): {}.
	Identity *IdentityProvider `json:"identity,omitempty"`
	// KMS is a KMS v2 envelope provider.
	KMS *KMSProvider `json:"kms,omitempty"`
}

// EncryptionKeys are the keys of an aesgcm, aescbc or secretbox provider
// (upstream AESConfiguration, SecretboxConfiguration).
type EncryptionKeys struct {
	// Keys, the first encrypts. Required, not empty.
	Keys []EncryptionKey `json:"keys"`
}

// EncryptionKey is one named key (upstream Key).
type EncryptionKey struct {
	// Name of the key, stored with the data it encrypts. Required, unique
	// within the provider.
	Name string `json:"name"`
	// Secret is the key, base64-encoded, of the length the provider
	// needs. Secret: a file on the machine or sealed; never shown.
	Secret SecretSource `json:"secret" secret:"encryption-key"`
}

// IdentityProvider is the identity provider's (empty) configuration.
type IdentityProvider struct{}

// KMSProvider is a KMS v2 envelope provider (upstream KMSConfiguration).
type KMSProvider struct {
	// APIVersion of the KMS plugin API: "v2" (default and only value).
	APIVersion string `json:"apiVersion,omitempty"`
	// Name of the plugin, stored with the data. Required, unique among
	// the KMS providers.
	Name string `json:"name"`
	// Endpoint is the plugin's gRPC listening address,
	// "unix:///absolute/path.sock". Required. With static pods the
	// socket's directory is mounted into the API server's pod.
	Endpoint string `json:"endpoint"`
	// Timeout of a plugin call, a Go duration. Default "3s".
	Timeout string `json:"timeout,omitempty"`
}

// Authentication configures the API server's authenticators beyond
// kubeadm's client certificates and tokens
// (spec.controlPlane.apiServer.authentication). JWT and Anonymous are
// written as an apiserver.config.k8s.io/v1 AuthenticationConfiguration to
// APIServerConfigDir/authentication-config.yaml (flag
// --authentication-config); Webhook adds a token webhook
// (--authentication-token-webhook-config-file).
type Authentication struct {
	// JWT are JWT authenticators, each the fields of an upstream
	// JWTAuthenticator (issuer, claimValidationRules, claimMappings,
	// userValidationRules), decoded strictly and validated with the
	// upstream validation.
	JWT []map[string]any `json:"jwt,omitempty"`
	// Anonymous configures anonymous requests (upstream
	// AnonymousAuthConfig). Owns the --anonymous-auth flag.
	Anonymous *AnonymousAuthentication `json:"anonymous,omitempty"`
	// Webhook is a token-review webhook authenticator. Optional.
	Webhook *AuthenticationWebhook `json:"webhook,omitempty"`
}

// AnonymousAuthentication configures anonymous requests (upstream
// AnonymousAuthConfig).
type AnonymousAuthentication struct {
	// Enabled allows anonymous requests. Default false.
	Enabled bool `json:"enabled"`
	// Conditions, when set, allow anonymous requests only on these paths,
	// for example "/livez", "/readyz", "/healthz" and
	// "/api/v1/namespaces/kube-public/configmaps/cluster-info" (kubeadm's
	// token discovery reads it anonymously).
	Conditions []AnonymousCondition `json:"conditions,omitempty"`
}

// AnonymousCondition is one path anonymous requests may reach.
type AnonymousCondition struct {
	// Path of the request, for example "/livez". Required.
	Path string `json:"path"`
}

// AuthenticationWebhook is a token-review webhook authenticator. Flags:
// --authentication-token-webhook-config-file, -version, -cache-ttl.
type AuthenticationWebhook struct {
	// KubeConfig locates and authenticates to the webhook. Secret: a file
	// on the machine or sealed. Written to
	// APIServerConfigDir/authentication-webhook.kubeconfig. Required.
	KubeConfig SecretSource `json:"kubeConfig" secret:"kubeconfig"`
	// Version of the TokenReview API sent: "v1" (default) or "v1beta1".
	Version string `json:"version,omitempty"`
	// CacheTTL is how long answers are cached, a Go duration. Default "2m".
	CacheTTL string `json:"cacheTTL,omitempty"`
}

// Authorization is the API server's authorizer chain, written as an
// apiserver.config.k8s.io/v1 AuthorizationConfiguration to
// APIServerConfigDir/authorization-config.yaml
// (spec.controlPlane.apiServer.authorization; flag --authorization-config,
// which replaces kubeadm's --authorization-mode).
type Authorization struct {
	// Authorizers in the order they are asked. Required; must include Node
	// and RBAC, which kubeadm's nodes and bootstrap tokens need.
	Authorizers []Authorizer `json:"authorizers"`
}

// Authorizer is one authorizer (upstream AuthorizerConfiguration).
type Authorizer struct {
	// Type is "Node", "RBAC", "Webhook", "ABAC", "AlwaysAllow" or
	// "AlwaysDeny". Required.
	Type string `json:"type"`
	// Name identifies the authorizer in metrics: a DNS-1123 label or
	// subdomain, unique. Default: the type in lower case; required for
	// webhooks.
	Name string `json:"name,omitempty"`
	// Webhook configures a Webhook authorizer; required for type Webhook,
	// refused for the others.
	Webhook *AuthorizationWebhook `json:"webhook,omitempty"`
}

// AuthorizationWebhook is a Webhook authorizer (upstream
// WebhookConfiguration). Its connection is always a kubeconfig file
// (connectionInfo type KubeConfigFile) that machineadm writes from
// KubeConfig; durations are Go durations.
type AuthorizationWebhook struct {
	// KubeConfig locates and authenticates to the webhook. Secret: a file
	// on the machine or sealed. Written to
	// APIServerConfigDir/authorization-webhook-<name>.kubeconfig.
	// Required.
	KubeConfig SecretSource `json:"kubeConfig" secret:"kubeconfig"`
	// Timeout of a request, at most "30s". Required.
	Timeout string `json:"timeout"`
	// SubjectAccessReviewVersion sent: "v1" or "v1beta1". Required.
	SubjectAccessReviewVersion string `json:"subjectAccessReviewVersion"`
	// MatchConditionSubjectAccessReviewVersion the match conditions see:
	// "v1". Required.
	MatchConditionSubjectAccessReviewVersion string `json:"matchConditionSubjectAccessReviewVersion"`
	// FailurePolicy when the webhook fails: "NoOpinion" or "Deny".
	// Required.
	FailurePolicy string `json:"failurePolicy"`
	// AuthorizedTTL caches allowed answers. Default "5m".
	AuthorizedTTL string `json:"authorizedTTL,omitempty"`
	// UnauthorizedTTL caches denied answers. Default "30s".
	UnauthorizedTTL string `json:"unauthorizedTTL,omitempty"`
	// CacheAuthorizedRequests caches allowed answers. Default true.
	CacheAuthorizedRequests *bool `json:"cacheAuthorizedRequests,omitempty"`
	// CacheUnauthorizedRequests caches denied answers. Default true.
	CacheUnauthorizedRequests *bool `json:"cacheUnauthorizedRequests,omitempty"`
	// MatchConditions are CEL expressions that must all be true for the
	// webhook to be asked (at most 64).
	MatchConditions []WebhookMatchCondition `json:"matchConditions,omitempty"`
}

// WebhookMatchCondition is a CEL expression over the SubjectAccessReview
// (upstream WebhookMatchCondition).
type WebhookMatchCondition struct {
	// Expression is the CEL expression, of type bool. Required.
	Expression string `json:"expression"`
}

// HostPathMount is a host path mounted into a static-pod control-plane
// component (kubeadm HostPathMount). Only with runtime StaticPods: units
// see the host's files directly.
type HostPathMount struct {
	// Name of the volume in the pod: a DNS-1123 label, unique among the
	// component's volumes (kubeadm's own are "k8s-certs", "ca-certs",
	// "etc-ca-certificates", "usr-share-ca-certificates",
	// "usr-local-share-ca-certificates", "kubeconfig", "etcd-certs-N";
	// machineadm's are "machineadm-apiserver-config",
	// "machineadm-audit-log" and "machineadm-kms-N"). Required.
	Name string `json:"name"`
	// HostPath is the absolute path on the host. Required.
	HostPath string `json:"hostPath"`
	// MountPath is the absolute path in the container. Required.
	MountPath string `json:"mountPath"`
	// ReadOnly mounts the path read-only. Default false.
	ReadOnly bool `json:"readOnly,omitempty"`
	// PathType is the core/v1 HostPathType: "", "DirectoryOrCreate",
	// "Directory", "FileOrCreate", "File", "Socket", "CharDevice" or
	// "BlockDevice". Default "" (no check).
	PathType string `json:"pathType,omitempty"`
}
