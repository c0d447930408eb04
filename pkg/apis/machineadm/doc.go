// Package machineadm is the hub of the machine spec: the types the rest of
// machineadm works on, and the functions over them that every consumer
// shares (SecretFields, DecodeContent, URLHasCredentials).
//
// The hub is the newest released version. Every type, Role/Action value,
// default and SetDefaults is an alias of the same name in that version's
// package (today v1alpha1), as Ignition's config package names its newest
// config/v3_x/types: there is no second copy of the types to keep in step,
// and no conversion for documents of the newest version. Code outside
// pkg/apis/machineadm/... uses these names and never imports a version
// package, except the spec loader (pkg/spec) and the Cluster API
// controller (pkg/capi/controller), which emits v1alpha1 documents by
// name; internal/fences' TestOnlyTheLoaderAndControllerImportSpecVersions
// enforces it. LatestVersion and LatestAPIVersion are the one place that
// says which version is the newest.
//
// An older version converts into the next one (v1alpha1 → v1alpha2 → …,
// chained as Ignition's translate packages do) and so into the hub;
// pkg/spec's version table holds the chain. docs/design.md ("Adding a spec
// version") lists the files a new version adds and changes.
// TestHubAliasesEveryName fails when the latest version declares an
// exported name without an alias here.
package machineadm
