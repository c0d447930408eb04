package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/goreleaser/nfpm/v2/rpm"
)

// Package metadata. The unit is installed but not enabled: an image builder
// enables it (Ignition-style boots), or a stub runs the agent itself.
const (
	pkgName        = "machineadm"
	pkgMaintainer  = "machineadm maintainers <machineadm@users.noreply.github.com>"
	pkgHomepage    = "https://github.com/machineadm/machineadm"
	pkgLicense     = "Apache-2.0"
	pkgDescription = "Bootstraps this machine into a Kubernetes cluster from one machine spec\n" +
		"machineadm reads one versioned machine spec, prepares the host, runs the\n" +
		"kubeadm it embeds to create or join a cluster and writes an outcome report.\n" +
		"Static binary; the systemd unit runs it once at boot when\n" +
		"/etc/machineadm/spec.yaml exists."
	// pkgBuildHost is the RPM build host: fixed, so the package does not
	// depend on the machine that built it.
	pkgBuildHost = "reproducible"

	// installedAgent is where the packages install the agent.
	installedAgent = "/usr/bin/machineadm"
	// installedUnit is the packaged systemd unit (the systemd package's
	// unit directory on merged-/usr Debian and on RPM distributions).
	installedUnit = "/usr/lib/systemd/system/machineadm.service"
	docDir        = "/usr/share/doc/machineadm"
	// unitAgentPath is the agent path of contrib/systemd/machineadm.service
	// (render.IgnitionAgentPath), replaced by installedAgent in the package.
	unitAgentPath = "/opt/bin/machineadm"
)

// packagedUnit returns contrib/systemd/machineadm.service with its one
// ExecStart pointing at installedAgent.
func packagedUnit(unit []byte) ([]byte, error) {
	old := "ExecStart=" + unitAgentPath + " "
	if n := bytes.Count(unit, []byte("\nExecStart=")); n != 1 || !bytes.Contains(unit, []byte("\n"+old)) {
		return nil, fmt.Errorf("contrib/systemd/machineadm.service: want exactly one line starting %q", old)
	}
	return bytes.Replace(unit, []byte(old), []byte("ExecStart="+installedAgent+" "), 1), nil
}

// packageDocs lists the documentation files the packages install under
// docDir: README.md and docs/*.md (repository paths, sorted).
func packageDocs(repo string) ([]string, error) {
	md, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	out := []string{"README.md"}
	for _, p := range md {
		out = append(out, "docs/"+filepath.Base(p))
	}
	slices.Sort(out[1:])
	return out, nil
}

// packageInfo is the nfpm description of the package for one Linux
// architecture and packager ("deb" or "rpm"). work holds generated
// sources (the packaged unit).
func packageInfo(cfg *Config, arch, packager, work string) (*nfpm.Info, error) {
	docs, err := packageDocs(cfg.Repo)
	if err != nil {
		return nil, err
	}
	file := func(src, dst, typ string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: typ,
			FileInfo: &files.ContentFileInfo{Mode: mode, MTime: cfg.Epoch}}
	}
	contents := files.Contents{
		file(filepath.Join(cfg.Dist, "machineadm-linux-"+arch), installedAgent, "", 0o755),
		file(filepath.Join(work, "machineadm.service"), installedUnit, "", 0o644),
	}
	docType := ""
	if packager == "rpm" {
		docType = files.TypeRPMDoc
	}
	for _, d := range docs {
		contents = append(contents, file(filepath.Join(cfg.Repo, d), docDir+"/"+filepath.Base(d), docType, 0o644))
	}
	if packager == "deb" {
		// Debian policy 12.5: the license goes to /usr/share/doc/PKG/copyright.
		contents = append(contents, file(filepath.Join(cfg.Repo, "LICENSE"), docDir+"/copyright", "", 0o644))
	} else {
		contents = append(contents, file(filepath.Join(cfg.Repo, "LICENSE"), "/usr/share/licenses/machineadm/LICENSE", files.TypeRPMLicense, 0o644))
	}
	info := &nfpm.Info{
		Name:        pkgName,
		Arch:        arch,
		Platform:    "linux",
		Version:     cfg.Version,
		Section:     "admin",
		Priority:    "optional",
		Maintainer:  pkgMaintainer,
		Description: pkgDescription,
		Vendor:      "machineadm",
		Homepage:    pkgHomepage,
		License:     pkgLicense,
		MTime:       cfg.Epoch,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Umask:    0o022,
			RPM: nfpm.RPM{
				BuildHost: pkgBuildHost,
				Group:     "System Environment/Base",
				Summary:   strings.SplitN(pkgDescription, "\n", 2)[0],
			},
		},
	}
	return nfpm.WithDefaults(info), nil
}

// writePackages builds the deb and rpm packages of both Linux
// architectures and returns their file names.
func writePackages(cfg *Config) ([]string, error) {
	work, err := os.MkdirTemp("", "machineadm-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	unit, err := os.ReadFile(filepath.Join(cfg.Repo, "contrib/systemd/machineadm.service"))
	if err != nil {
		return nil, err
	}
	if unit, err = packagedUnit(unit); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(work, "machineadm.service"), unit, 0o644); err != nil {
		return nil, err
	}
	packagers := []struct {
		name string
		p    nfpm.Packager
	}{{"deb", deb.Default}, {"rpm", rpm.DefaultRPM}}
	var names []string
	for _, b := range Binaries {
		if b.OS != "linux" {
			continue
		}
		for _, pk := range packagers {
			info, err := packageInfo(cfg, b.Arch, pk.name, work)
			if err != nil {
				return nil, err
			}
			var buf bytes.Buffer
			if err := pk.p.Package(info, &buf); err != nil {
				return nil, fmt.Errorf("%s package for %s: %w", pk.name, b.Arch, err)
			}
			fresh, err := packageInfo(cfg, b.Arch, pk.name, work)
			if err != nil {
				return nil, err
			}
			name := pk.p.ConventionalFileName(fresh)
			if err := os.WriteFile(filepath.Join(cfg.Dist, name), buf.Bytes(), 0o644); err != nil {
				return nil, err
			}
			names = append(names, name)
		}
	}
	return names, nil
}
