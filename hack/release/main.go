// Command release assembles a machineadm release in a dist directory that
// already holds the three agent binaries `make release` cross-built there:
//
//	machineadm-linux-amd64, machineadm-linux-arm64, machineadm-windows-amd64.exe
//
// It adds, for version V (vX.Y.Z) and a source date S (seconds since the
// epoch, the commit time; every file time inside an artifact is S):
//
//	machineadm_X.Y.Z_ARCH.deb, machineadm-X.Y.Z-1.RPMARCH.rpm
//	    nfpm packages for both Linux architectures (packages.go)
//	machineadm-V-windows-amd64.zip
//	    the Windows binary with contrib/windows (archive.go)
//	BINARY.spdx.json
//	    an SPDX 2.3 SBOM per binary from its Go build information (sbom.go)
//	SHA256SUMS
//	    `sha256sum` lines for every artifact above, sorted by name
//	ARTIFACT.sig, SHA256SUMS.sig
//	    base64 of an ASN.1 DER signature over SHA-256 (sign.go)
//	machineadm-release.pub
//	    the PEM public key of the signing key
//
// Everything but the signatures is a function of the repository and the
// binaries, so two runs on the same commit give the same bytes.
//
// Usage:
//
//	release -repo DIR -dist DIR -version vX.Y.Z -source-date-epoch S -key KEY.pem
//	release -agents-only -dist DIR -key KEY.pem
//
// -agents-only writes only what machineadm-controller's image carries to
// serve the agent from the management cluster (make image-controller):
// SHA256SUMS of the three binaries, BINARY.sig for each and for
// SHA256SUMS, and the public key; no packages, zip or SBOMs, so no
// version or source date.
//
// Exit codes: 0 done; 1 a step failed; 2 bad arguments (nothing written).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// Binaries are the agent binaries `make release` builds, by platform.
var Binaries = []Binary{
	{OS: "linux", Arch: "amd64", File: "machineadm-linux-amd64"},
	{OS: "linux", Arch: "arm64", File: "machineadm-linux-arm64"},
	{OS: "windows", Arch: "amd64", File: "machineadm-windows-amd64.exe"},
}

// Binary is one cross-built agent binary in the dist directory.
type Binary struct {
	OS, Arch string
	// File is the file name inside the dist directory.
	File string
}

// PublicKeyFile is the name of the public key written into the dist
// directory. Users pin the key from a trusted channel, not from here.
const PublicKeyFile = "machineadm-release.pub"

// SumsFile is the name of the digest list.
const SumsFile = "SHA256SUMS"

// SigSuffix is appended to an artifact's name for its signature.
const SigSuffix = ".sig"

// semver is the release version form: v, then MAJOR.MINOR.PATCH, then an
// optional pre-release (Semantic Versioning 2.0.0 §9, without build
// metadata, which packages cannot carry).
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// Config is what one release run needs.
type Config struct {
	// Repo is the repository's top directory (README.md, docs/, contrib/).
	Repo string
	// Dist holds the binaries and receives the artifacts.
	Dist string
	// Version is the release version, vX.Y.Z[-PRE].
	Version string
	// Epoch is the time written into every artifact (SOURCE_DATE_EPOCH).
	Epoch time.Time
	// Key is the path of the PEM signing key (ECDSA or RSA, unencrypted
	// PKCS #8, SEC 1 or PKCS #1), readable by its owner only.
	Key string
	// AgentsOnly signs the binaries only (-agents-only).
	AgentsOnly bool
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// usageError is bad input: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

func parseFlags(args []string) (*Config, error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	cfg := &Config{}
	var epoch string
	fs.StringVar(&cfg.Repo, "repo", ".", "repository top directory")
	fs.StringVar(&cfg.Dist, "dist", "dist", "directory with the binaries; receives the artifacts")
	fs.StringVar(&cfg.Version, "version", "", "release version vX.Y.Z (required)")
	fs.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "seconds since the epoch written into every artifact (default $SOURCE_DATE_EPOCH)")
	fs.StringVar(&cfg.Key, "key", "", "PEM signing key, ECDSA or RSA (required)")
	fs.BoolVar(&cfg.AgentsOnly, "agents-only", false, "only SHA256SUMS, signatures and the public key of the three binaries (the controller image's agent builds)")
	if err := fs.Parse(args); err != nil {
		return nil, usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected arguments %q", fs.Args())
	}
	if cfg.AgentsOnly {
		return cfg, checkKeyAndBinaries(cfg)
	}
	if !semver.MatchString(cfg.Version) {
		return nil, usagef("-version %q: want vMAJOR.MINOR.PATCH[-PRERELEASE], e.g. VERSION=v0.3.0", cfg.Version)
	}
	s, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil || s < 315532800 { // zip (MS-DOS) times start in 1980
		return nil, usagef("-source-date-epoch %q: want seconds since the epoch, 1980 or later (the commit time: git log -1 --format=%%ct)", epoch)
	}
	cfg.Epoch = time.Unix(s, 0).UTC()
	return cfg, checkKeyAndBinaries(cfg)
}

// checkKeyAndBinaries checks -key and that the three binaries exist.
func checkKeyAndBinaries(cfg *Config) error {
	if cfg.Key == "" {
		return usagef("-key: required (SIGNING_KEY=path of an ECDSA P-256 PEM private key)")
	}
	if err := checkKeyFile(cfg.Key); err != nil {
		return &usageError{err.Error()}
	}
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(cfg.Dist, b.File)); err != nil {
			return usagef("binary missing (make release builds it): %v", err)
		}
	}
	return nil
}

// checkKeyFile refuses a signing key that others can read.
func checkKeyFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("-key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("-key %s: not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("-key %s: mode %v lets others read the private key; chmod 600 it", path, fi.Mode().Perm())
	}
	return nil
}

func run(cfg *Config) error {
	var artifacts []string
	for _, b := range Binaries {
		artifacts = append(artifacts, b.File)
		if cfg.AgentsOnly {
			continue
		}
		sbom, err := writeSBOM(cfg, b)
		if err != nil {
			return fmt.Errorf("SBOM of %s: %w", b.File, err)
		}
		artifacts = append(artifacts, sbom)
	}
	if !cfg.AgentsOnly {
		pkgs, err := writePackages(cfg)
		if err != nil {
			return err
		}
		artifacts = append(artifacts, pkgs...)
		zip, err := writeWindowsZip(cfg)
		if err != nil {
			return fmt.Errorf("windows zip: %w", err)
		}
		artifacts = append(artifacts, zip)
	}
	if err := writeSums(cfg.Dist, artifacts); err != nil {
		return err
	}
	signer, err := loadSigner(cfg.Key)
	if err != nil {
		return err
	}
	if err := signAll(signer, cfg.Dist, append(artifacts, SumsFile)); err != nil {
		return err
	}
	if err := writePublicKey(signer, filepath.Join(cfg.Dist, PublicKeyFile)); err != nil {
		return err
	}
	for _, a := range append(artifacts, SumsFile) {
		fi, err := os.Stat(filepath.Join(cfg.Dist, a))
		if err != nil {
			return err
		}
		fmt.Printf("%10d  %s (+%s)\n", fi.Size(), a, SigSuffix)
	}
	return nil
}
