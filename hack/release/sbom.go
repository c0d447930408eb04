package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
	"unicode"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx"
	"github.com/spdx/tools-golang/spdx/v2/common"
	"github.com/spdx/tools-golang/spdxlib"
)

// sbomName is the SBOM's file name for a binary.
func sbomName(binary string) string { return binary + ".spdx.json" }

// noAssertion is SPDX's "no information given" value.
const noAssertion = "NOASSERTION"

// writeSBOM writes the SBOM of binary b next to it and returns its name.
func writeSBOM(cfg *Config, b Binary) (string, error) {
	path := filepath.Join(cfg.Dist, b.File)
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	bi, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("%s has no Go build information: %w", b.File, err)
	}
	doc, err := BuildSBOM(bi, b.File, data, cfg.Version, cfg.Epoch)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := spdxjson.Write(doc, &out, spdxjson.Indent("  "), spdxjson.EscapeHTML(false)); err != nil {
		return "", err
	}
	name := sbomName(b.File)
	return name, os.WriteFile(filepath.Join(cfg.Dist, name), out.Bytes(), 0o644)
}

// BuildSBOM describes a Go binary as an SPDX 2.3 document from its build
// information (debug/buildinfo, the same data as `go version -m`):
//
//   - the binary itself: the main module's path as name, version (the
//     main module's version in a stamped build is "(devel)", so the
//     release version is used), the binary's SHA-256, its purl
//     (pkg:golang/PATH@VERSION) and the build settings (GOOS, GOARCH,
//     CGO_ENABLED, -trimpath, -ldflags …) as its comment;
//   - the Go standard library at the toolchain version (pkg:golang/stdlib);
//   - one package per dependency module linked into the binary: module
//     path, version, the module's go.sum hash (h1:, base64 of a SHA-256 over
//     the module's file list, see golang.org/x/mod/sumdb/dirhash) both as
//     an SHA256 checksum and verbatim in the comment, its purl and its
//     module proxy download URL. A `replace`d module is recorded as its
//     replacement, with the original path and version in the comment.
//
// Relationships: DOCUMENT DESCRIBES the binary; the binary STATIC_LINKs
// the standard library and every module. Created is epoch (RFC 3339, UTC);
// the document namespace is derived from the version, the file name and
// the binary's digest, so the document is a function of its inputs.
func BuildSBOM(bi *debug.BuildInfo, file string, binary []byte, version string, epoch time.Time) (*spdx.Document, error) {
	sum := sha256.Sum256(binary)
	digest := hex.EncodeToString(sum[:])
	mainPath := bi.Main.Path
	if mainPath == "" {
		mainPath = bi.Path
	}
	root := &spdx.Package{
		PackageName:             mainPath,
		PackageSPDXIdentifier:   common.ElementID("Package-" + spdxID(file)),
		PackageVersion:          version,
		PackageFileName:         file,
		PackageDownloadLocation: noAssertion,
		PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: digest}},
		PackageHomePage:         pkgHomepage,
		PackageLicenseConcluded: noAssertion,
		PackageLicenseDeclared:  pkgLicense,
		PackageCopyrightText:    noAssertion,
		PackageComment:          buildSettings(bi),
		PrimaryPackagePurpose:   "APPLICATION",
		PackageExternalReferences: []*spdx.PackageExternalReference{
			purlRef(mainPath, version),
		},
	}
	goVersion := strings.TrimPrefix(bi.GoVersion, "go")
	stdlib := &spdx.Package{
		PackageName:             "stdlib",
		PackageSPDXIdentifier:   common.ElementID("Package-go-stdlib-" + spdxID(goVersion)),
		PackageVersion:          bi.GoVersion,
		PackageDownloadLocation: "https://go.dev/dl/",
		PackageLicenseConcluded: noAssertion,
		PackageLicenseDeclared:  "BSD-3-Clause",
		PackageCopyrightText:    noAssertion,
		PackageComment:          "The Go standard library and runtime of the toolchain that built the binary.",
		PrimaryPackagePurpose:   "LIBRARY",
		PackageExternalReferences: []*spdx.PackageExternalReference{
			purlRef("stdlib", goVersion),
		},
	}
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      file + "-" + version,
		DocumentNamespace: fmt.Sprintf("%s/spdx/%s/%s-%s", pkgHomepage, version, file, digest),
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "machineadm-hack-release"}},
			Created:  epoch.UTC().Format(time.RFC3339),
		},
		Packages: []*spdx.Package{root, stdlib},
		Relationships: []*spdx.Relationship{
			rel("DOCUMENT", root.PackageSPDXIdentifier, common.TypeRelationshipDescribe),
			rel(root.PackageSPDXIdentifier, stdlib.PackageSPDXIdentifier, common.TypeRelationshipStaticLink),
		},
	}
	seen := map[common.ElementID]bool{}
	for _, dep := range bi.Deps {
		p, err := modulePackage(dep)
		if err != nil {
			return nil, err
		}
		if seen[p.PackageSPDXIdentifier] {
			return nil, fmt.Errorf("module %s@%s listed twice", dep.Path, dep.Version)
		}
		seen[p.PackageSPDXIdentifier] = true
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships,
			rel(root.PackageSPDXIdentifier, p.PackageSPDXIdentifier, common.TypeRelationshipStaticLink))
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// modulePackage is the SPDX package of one dependency module.
func modulePackage(dep *debug.Module) (*spdx.Package, error) {
	m, comment := dep, ""
	if dep.Replace != nil {
		m = dep.Replace
		comment = fmt.Sprintf("Replaces %s@%s. ", dep.Path, dep.Version)
	}
	p := &spdx.Package{
		PackageName:             m.Path,
		PackageSPDXIdentifier:   common.ElementID("Package-go-module-" + spdxID(m.Path+"-"+m.Version)),
		PackageVersion:          m.Version,
		PackageDownloadLocation: noAssertion,
		PackageLicenseConcluded: noAssertion,
		PackageLicenseDeclared:  noAssertion,
		PackageCopyrightText:    noAssertion,
		PrimaryPackagePurpose:   "LIBRARY",
	}
	if m.Version == "" { // a replacement by a local directory
		p.PackageVersion = noAssertion
		comment += "Replaced by a local directory; no module version or sum."
		p.PackageComment = comment
		return p, nil
	}
	p.PackageDownloadLocation = "https://proxy.golang.org/" + escapeModule(m.Path) + "/@v/" + escapeModule(m.Version) + ".zip"
	p.PackageExternalReferences = []*spdx.PackageExternalReference{purlRef(m.Path, m.Version)}
	if m.Sum != "" {
		h1, ok := strings.CutPrefix(m.Sum, "h1:")
		raw, err := base64.StdEncoding.DecodeString(h1)
		if !ok || err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("module %s@%s: sum %q is not an h1: SHA-256 hash", m.Path, m.Version, m.Sum)
		}
		p.PackageChecksums = []common.Checksum{{Algorithm: common.SHA256, Value: hex.EncodeToString(raw)}}
		comment += "go.sum: " + m.Sum
	}
	p.PackageComment = strings.TrimSpace(comment)
	return p, nil
}

// buildSettings renders the build's settings ("key=value", one a line)
// and Go version for the binary's package comment.
func buildSettings(bi *debug.BuildInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Built with %s.", bi.GoVersion)
	for _, s := range bi.Settings {
		fmt.Fprintf(&b, "\n%s=%s", s.Key, s.Value)
	}
	return b.String()
}

func purlRef(path, version string) *spdx.PackageExternalReference {
	return &spdx.PackageExternalReference{
		Category: common.CategoryPackageManager,
		RefType:  common.TypePackageManagerPURL,
		Locator:  "pkg:golang/" + path + "@" + version,
	}
}

func rel(a, b common.ElementID, typ string) *spdx.Relationship {
	return &spdx.Relationship{
		RefA:         common.MakeDocElementID("", string(a)),
		RefB:         common.MakeDocElementID("", string(b)),
		Relationship: typ,
	}
}

// notIDChar is what an SPDX identifier may not hold (SPDX 2.3 §7.2:
// letters, digits, "." and "-").
var notIDChar = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// spdxID turns s into the idstring part of an SPDX identifier.
func spdxID(s string) string { return notIDChar.ReplaceAllString(s, "-") }

// escapeModule applies the module proxy's case encoding (upper-case
// letters become "!" and the lower-case letter, golang.org/x/mod/module).
func escapeModule(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
