package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// zipEntry is one file of a zip archive.
type zipEntry struct {
	// Name is the path inside the archive (forward slashes).
	Name string
	Mode fs.FileMode
	Data []byte
}

// writeZip returns a deterministic zip archive of entries: sorted by name,
// every entry deflated with modification time mtime (UTC; the MS-DOS field
// and the extended-timestamp field agree), no directory entries, no
// comment. The same entries and mtime always give the same bytes.
func writeZip(entries []zipEntry, mtime time.Time) ([]byte, error) {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b zipEntry) int { return strings.Compare(a.Name, b.Name) })
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i, e := range sorted {
		if i > 0 && sorted[i-1].Name == e.Name {
			return nil, fmt.Errorf("zip: %s twice", e.Name)
		}
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate, Modified: mtime.UTC()}
		h.SetMode(e.Mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(e.Data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// windowsZipName is the Windows archive's file name for version v.
func windowsZipName(v string) string { return "machineadm-" + v + "-windows-amd64.zip" }

// writeWindowsZip writes the Windows archive: machineadm.exe, the
// first-boot scripts of contrib/windows (firstboot.ps1, unattend.xml),
// LICENSE and README.md, all at the top level, so that extracting it into
// C:\Program Files\machineadm puts the agent where firstboot.ps1 expects it.
func writeWindowsZip(cfg *Config) (string, error) {
	exe, err := os.ReadFile(filepath.Join(cfg.Dist, "machineadm-windows-amd64.exe"))
	if err != nil {
		return "", err
	}
	entries := []zipEntry{{Name: "machineadm.exe", Mode: 0o755, Data: exe}}
	scripts, err := os.ReadDir(filepath.Join(cfg.Repo, "contrib/windows"))
	if err != nil {
		return "", err
	}
	var names []string
	for _, s := range scripts {
		if s.Type().IsRegular() {
			names = append(names, "contrib/windows/"+s.Name())
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("contrib/windows has no scripts")
	}
	for _, n := range append(names, "LICENSE", "README.md") {
		b, err := os.ReadFile(filepath.Join(cfg.Repo, n))
		if err != nil {
			return "", err
		}
		entries = append(entries, zipEntry{Name: filepath.Base(n), Mode: 0o644, Data: b})
	}
	z, err := writeZip(entries, cfg.Epoch)
	if err != nil {
		return "", err
	}
	name := windowsZipName(cfg.Version)
	return name, os.WriteFile(filepath.Join(cfg.Dist, name), z, 0o644)
}

// sumsText returns `sha256sum` output for the files of dist named in
// names: "HEX  NAME\n" per file, sorted by name, so that
// `sha256sum --check --ignore-missing SHA256SUMS` works in a directory
// holding some of them.
func sumsText(dist string, names []string) ([]byte, error) {
	sorted := slices.Sorted(slices.Values(names))
	var b strings.Builder
	for _, n := range sorted {
		data, err := os.ReadFile(filepath.Join(dist, n))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), n)
	}
	return []byte(b.String()), nil
}

func writeSums(dist string, names []string) error {
	text, err := sumsText(dist, names)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dist, SumsFile), text, 0o644)
}
