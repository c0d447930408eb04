// Package render turns a machine spec into bootstrap data for an OS
// bootstrapper, in one of the formats of the registry in formats.go
// (cloud-init cloud-config, Ignition 3.x JSON, a POSIX sh script, a
// first-boot PowerShell script, a Windows unattend.xml).
//
// Every format carries the same tiny program, "the stub": fetch the
// machineadm agent (or use one already in the image), verify its SHA-256
// digest — and an optional signature — before anything runs, install it,
// write the spec (inline, gzip-compressed and base64-encoded, or fetched
// from a payload URL and verified by digest) readable by root only, and run
// `machineadm bootstrap -f SPEC`. Renderers hold no kubeadm or host logic:
// everything else happens inside machineadm.
//
// Render is secure by default: a spec that carries secret values inline
// (SecretSource.value, private keys, tokens, passwords, URLs with
// credentials — whatever InlineSecrets and the secret-shape detector of
// package validation find) is refused with an *InlineSecretsError, and an
// agent, signature or payload URL with credentials with an *OptionError,
// unless Options.AllowInlineSecrets is set, because user data is readable
// by anyone with read access to the infrastructure. Output larger than
// Options.MaxSize is refused with a *SizeError.
//
// Every value written into a script or a parsed file is quoted by package
// render/quote, one function per language; control characters in a path
// that reaches a script are refused (*OptionError).
//
// See docs/render.md for the user guide and docs/bootstrap-data-sizes.md
// for measured sizes.
package render
