package machineadm

import latest "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"

// Version names of the machine spec. LatestVersion is the one constant
// that says which version is the hub; every other place (pkg/spec's
// version table, gen-schema, config migrate and defaults, render) derives
// from it.
const (
	// GroupName is the API group of the machine spec, "machineadm.io".
	GroupName = latest.GroupName
	// LatestVersion is the newest spec version, "v1alpha1": the version
	// machineadm writes and the one these types alias.
	LatestVersion = latest.Version
	// LatestAPIVersion is the apiVersion of LatestVersion documents,
	// "machineadm.io/v1alpha1".
	LatestAPIVersion = latest.APIVersion
	// Kind is the kind of the machine spec document,
	// "MachineBootstrapConfig".
	Kind = latest.Kind
)

// Types of the machine spec; see package v1alpha1 for each field's
// meaning, shape and default.
type (
	// MachineBootstrapConfig is MachineBootstrapConfig of the latest version.
	MachineBootstrapConfig = latest.MachineBootstrapConfig
	// ObjectMeta is ObjectMeta of the latest version.
	ObjectMeta = latest.ObjectMeta
	// Role is Role of the latest version.
	Role = latest.Role
	// Action is Action of the latest version.
	Action = latest.Action
	// MachineBootstrapSpec is MachineBootstrapSpec of the latest version.
	MachineBootstrapSpec = latest.MachineBootstrapSpec
	// Kubernetes is Kubernetes of the latest version.
	Kubernetes = latest.Kubernetes
	// Networking is Networking of the latest version.
	Networking = latest.Networking
	// Arg is Arg of the latest version.
	Arg = latest.Arg
	// Component is Component of the latest version.
	Component = latest.Component
	// APIServer is APIServer of the latest version.
	APIServer = latest.APIServer
	// ControlPlane is ControlPlane of the latest version.
	ControlPlane = latest.ControlPlane
	// Etcd is Etcd of the latest version.
	Etcd = latest.Etcd
	// LocalEtcd is LocalEtcd of the latest version.
	LocalEtcd = latest.LocalEtcd
	// ExternalEtcd is ExternalEtcd of the latest version.
	ExternalEtcd = latest.ExternalEtcd
	// PKI is PKI of the latest version.
	PKI = latest.PKI
	// SecretSource is SecretSource of the latest version.
	SecretSource = latest.SecretSource
	// BootstrapToken is BootstrapToken of the latest version.
	BootstrapToken = latest.BootstrapToken
	// Join is Join of the latest version.
	Join = latest.Join
	// Node is Node of the latest version.
	Node = latest.Node
	// Taint is Taint of the latest version.
	Taint = latest.Taint
	// Kubelet is Kubelet of the latest version.
	Kubelet = latest.Kubelet
	// Host is Host of the latest version.
	Host = latest.Host
	// DomainJoin is spec.host.domainJoin.
	DomainJoin = latest.DomainJoin
	// DomainCredentials is spec.host.domainJoin.credentials.
	DomainCredentials = latest.DomainCredentials
	// LinuxDomainJoin is spec.host.domainJoin.linux.
	LinuxDomainJoin = latest.LinuxDomainJoin
	// Security is spec.security.
	Security = latest.Security
	// Waiver is spec.security.waivers[].
	Waiver = latest.Waiver
	// File is File of the latest version.
	File = latest.File
	// RemoteSource is RemoteSource of the latest version.
	RemoteSource = latest.RemoteSource
	// Containerd is Containerd of the latest version.
	Containerd = latest.Containerd
	// Registry is Registry of the latest version.
	Registry = latest.Registry
	// Mirror is Mirror of the latest version.
	Mirror = latest.Mirror
	// Proxy is Proxy of the latest version.
	Proxy = latest.Proxy
	// Runtime is Runtime of the latest version.
	Runtime = latest.Runtime
	// ControlPlaneRuntime is ControlPlaneRuntime of the latest version.
	ControlPlaneRuntime = latest.ControlPlaneRuntime
	// ControlPlaneBinaries is ControlPlaneBinaries of the latest version.
	ControlPlaneBinaries = latest.ControlPlaneBinaries
	// StaticPod is StaticPod of the latest version.
	StaticPod = latest.StaticPod
	// Report is Report of the latest version.
	Report = latest.Report
	// OS is OS of the latest version (spec.os).
	OS = latest.OS
	// OSDefaults is OSDefaults of the latest version.
	OSDefaults = latest.OSDefaults
	// Audit is Audit of the latest version (types_security.go).
	Audit = latest.Audit
	// AuditLog is AuditLog of the latest version (types_security.go).
	AuditLog = latest.AuditLog
	// AuditWebhook is AuditWebhook of the latest version (types_security.go).
	AuditWebhook = latest.AuditWebhook
	// Encryption is Encryption of the latest version (types_security.go).
	Encryption = latest.Encryption
	// EncryptionResource is EncryptionResource of the latest version (types_security.go).
	EncryptionResource = latest.EncryptionResource
	// EncryptionProvider is EncryptionProvider of the latest version (types_security.go).
	EncryptionProvider = latest.EncryptionProvider
	// EncryptionKeys is EncryptionKeys of the latest version (types_security.go).
	EncryptionKeys = latest.EncryptionKeys
	// EncryptionKey is EncryptionKey of the latest version (types_security.go).
	EncryptionKey = latest.EncryptionKey
	// IdentityProvider is IdentityProvider of the latest version (types_security.go).
	IdentityProvider = latest.IdentityProvider
	// KMSProvider is KMSProvider of the latest version (types_security.go).
	KMSProvider = latest.KMSProvider
	// Authentication is Authentication of the latest version (types_security.go).
	Authentication = latest.Authentication
	// AnonymousAuthentication is AnonymousAuthentication of the latest version (types_security.go).
	AnonymousAuthentication = latest.AnonymousAuthentication
	// AnonymousCondition is AnonymousCondition of the latest version (types_security.go).
	AnonymousCondition = latest.AnonymousCondition
	// AuthenticationWebhook is AuthenticationWebhook of the latest version (types_security.go).
	AuthenticationWebhook = latest.AuthenticationWebhook
	// Authorization is Authorization of the latest version (types_security.go).
	Authorization = latest.Authorization
	// Authorizer is Authorizer of the latest version (types_security.go).
	Authorizer = latest.Authorizer
	// AuthorizationWebhook is AuthorizationWebhook of the latest version (types_security.go).
	AuthorizationWebhook = latest.AuthorizationWebhook
	// WebhookMatchCondition is WebhookMatchCondition of the latest version (types_security.go).
	WebhookMatchCondition = latest.WebhookMatchCondition
	// HostPathMount is HostPathMount of the latest version (types_security.go).
	HostPathMount = latest.HostPathMount
)

// Values of Role, Action and ControlPlaneRuntime.
const (
	// RoleControlPlane is RoleControlPlane of the latest version.
	RoleControlPlane = latest.RoleControlPlane
	// RoleWorker is RoleWorker of the latest version.
	RoleWorker = latest.RoleWorker
	// ActionInit is ActionInit of the latest version.
	ActionInit = latest.ActionInit
	// ActionJoin is ActionJoin of the latest version.
	ActionJoin = latest.ActionJoin
	// RuntimeStaticPods is RuntimeStaticPods of the latest version.
	RuntimeStaticPods = latest.RuntimeStaticPods
	// RuntimeSystemd is RuntimeSystemd of the latest version.
	RuntimeSystemd = latest.RuntimeSystemd
	// OSLinux is OSLinux of the latest version.
	OSLinux = latest.OSLinux
	// OSWindows is OSWindows of the latest version.
	OSWindows = latest.OSWindows
)

// Default values the latest version's SetDefaults applies.
const (
	// DefaultClusterName is DefaultClusterName of the latest version.
	DefaultClusterName = latest.DefaultClusterName
	// DefaultImageRepository is DefaultImageRepository of the latest version.
	DefaultImageRepository = latest.DefaultImageRepository
	// DefaultServiceSubnet is DefaultServiceSubnet of the latest version.
	DefaultServiceSubnet = latest.DefaultServiceSubnet
	// DefaultDNSDomain is DefaultDNSDomain of the latest version.
	DefaultDNSDomain = latest.DefaultDNSDomain
	// DefaultBindPort is DefaultBindPort of the latest version.
	DefaultBindPort = latest.DefaultBindPort
	// DefaultCertificatesDir is DefaultCertificatesDir of the latest version.
	DefaultCertificatesDir = latest.DefaultCertificatesDir
	// DefaultEncryptionAlgo is DefaultEncryptionAlgo of the latest version.
	DefaultEncryptionAlgo = latest.DefaultEncryptionAlgo
	// DefaultRuntime is DefaultRuntime of the latest version.
	DefaultRuntime = latest.DefaultRuntime
	// DefaultBinDir is DefaultBinDir of the latest version.
	DefaultBinDir = latest.DefaultBinDir
	// DefaultEtcdDataDir is DefaultEtcdDataDir of the latest version.
	DefaultEtcdDataDir = latest.DefaultEtcdDataDir
	// DefaultJoinTimeout is DefaultJoinTimeout of the latest version.
	DefaultJoinTimeout = latest.DefaultJoinTimeout
	// DefaultTokenTTL is DefaultTokenTTL of the latest version.
	DefaultTokenTTL = latest.DefaultTokenTTL
	// DefaultKeytab is DefaultKeytab of the latest version.
	DefaultKeytab = latest.DefaultKeytab
	// DefaultOS is DefaultOS of the latest version: the OS machineadm is
	// built for.
	DefaultOS = latest.DefaultOS
	// DefaultFileMode is DefaultFileMode of the latest version.
	DefaultFileMode = latest.DefaultFileMode
	// DefaultFileOwner is DefaultFileOwner of the latest version.
	DefaultFileOwner = latest.DefaultFileOwner
	// DefaultCgroupDriver is DefaultCgroupDriver of the latest version.
	DefaultCgroupDriver = latest.DefaultCgroupDriver
	// APIServerConfigDir is APIServerConfigDir of the latest version.
	APIServerConfigDir = latest.APIServerConfigDir
	// DefaultAuditLogPath is DefaultAuditLogPath of the latest version.
	DefaultAuditLogPath = latest.DefaultAuditLogPath
	// DefaultAuditLogMaxAge is DefaultAuditLogMaxAge of the latest version.
	DefaultAuditLogMaxAge = latest.DefaultAuditLogMaxAge
	// DefaultAuditLogMaxSize is DefaultAuditLogMaxSize of the latest version.
	DefaultAuditLogMaxSize = latest.DefaultAuditLogMaxSize
	// DefaultAuditLogMaxBackups is DefaultAuditLogMaxBackups of the latest version.
	DefaultAuditLogMaxBackups = latest.DefaultAuditLogMaxBackups
	// DefaultAuditWebhookMode is DefaultAuditWebhookMode of the latest version.
	DefaultAuditWebhookMode = latest.DefaultAuditWebhookMode
	// DefaultKMSAPIVersion is DefaultKMSAPIVersion of the latest version.
	DefaultKMSAPIVersion = latest.DefaultKMSAPIVersion
	// DefaultKMSTimeout is DefaultKMSTimeout of the latest version.
	DefaultKMSTimeout = latest.DefaultKMSTimeout
	// DefaultAuthenticationWebhookVersion is DefaultAuthenticationWebhookVersion of the latest version.
	DefaultAuthenticationWebhookVersion = latest.DefaultAuthenticationWebhookVersion
	// DefaultAuthenticationWebhookCacheTTL is DefaultAuthenticationWebhookCacheTTL of the latest version.
	DefaultAuthenticationWebhookCacheTTL = latest.DefaultAuthenticationWebhookCacheTTL
	// DefaultAuthorizedTTL is DefaultAuthorizedTTL of the latest version.
	DefaultAuthorizedTTL = latest.DefaultAuthorizedTTL
	// DefaultUnauthorizedTTL is DefaultUnauthorizedTTL of the latest version.
	DefaultUnauthorizedTTL = latest.DefaultUnauthorizedTTL
)

// SetDefaults fills every unset field of c that has a default, in place,
// with the latest version's defaults (v1alpha1.SetDefaults). It never
// overrides a value the user gave and is idempotent. Specs of older
// versions get their own version's defaults before conversion (pkg/spec).
func SetDefaults(c *MachineBootstrapConfig) { latest.SetDefaults(c) }

// DefaultsFor returns the OS-dependent defaults of spec.os os
// (v1alpha1.DefaultsFor).
func DefaultsFor(os OS) OSDefaults { return latest.DefaultsFor(os) }

// OSOf returns the OS spec s is for: s.OS, or DefaultOS when empty
// (v1alpha1.OSOf).
func OSOf(s *MachineBootstrapSpec) OS { return latest.OSOf(s) }
