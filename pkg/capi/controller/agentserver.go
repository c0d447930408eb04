package controller

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/render"
)

// The agent server (R10: the agent downloadable from the management
// cluster). machineadm-controller's image carries the signed agent builds
// as a release makes them (hack/release): the three binaries, SHA256SUMS,
// a detached signature per binary (BINARY.sig) and the release's public
// key. AgentStore serves them over HTTPS (machineadm-controller
// --agent-bind-address, with its serving certificate), and a
// MachineadmConfig that names no agent source (spec.agent.url empty) gets
// bootstrap data that downloads its platform's build from there, pinned by
// the digest SHA256SUMS lists, checked against its signature (Linux), over
// TLS verified with the server's CA.
const (
	// DefaultAgentDir is where the controller's image holds the agent
	// builds.
	DefaultAgentDir = "/agents"
	// agentPathPrefix is the server's path below the agent URL base.
	agentPathPrefix = "/agents/"
	// agentSumsFile and agentPublicKeyFile are a release's digest list and
	// public key (hack/release SumsFile, PublicKeyFile).
	agentSumsFile      = "SHA256SUMS"
	agentPublicKeyFile = "machineadm-release.pub"
	agentSigSuffix     = ".sig"
	// maxAgentSideFile bounds SHA256SUMS, a signature and the public key
	// (a few hundred bytes each).
	maxAgentSideFile = 64 << 10
)

// AgentPlatforms are the builds AgentStore serves, by "OS/ARCH", with
// their file names (hack/release Binaries).
var AgentPlatforms = map[string]string{
	"linux/amd64":   "machineadm-linux-amd64",
	"linux/arm64":   "machineadm-linux-arm64",
	"windows/amd64": "machineadm-windows-amd64.exe",
}

// agentFile is one build AgentStore serves.
type agentFile struct {
	name, path string
	sha256     string // hex, as SHA256SUMS lists it and the file hashes
	signature  bool   // name.sig exists
}

// AgentStore holds the agent builds of a directory, checked once at load,
// and serves them: GET or HEAD /agents/NAME for a build, its .sig,
// SHA256SUMS and the public key; anything else is 404. It is an
// http.Handler; serve it over TLS.
type AgentStore struct {
	// BaseURL is where machines reach the server: https://HOST[:PORT].
	BaseURL string
	// CACert is the PEM bundle machines verify the server's certificate
	// with (the rendered stub pins it).
	CACert []byte
	// Log receives one line per download. Default: discard.
	Log logr.Logger

	dir       string
	files     map[string]agentFile // by platform
	publicKey []byte               // PEM; nil without one
	served    map[string]string    // URL name -> path
}

// LoadAgentStore reads dir: SHA256SUMS must list every build of
// AgentPlatforms that is present, and each present build must hash to its
// listed digest (a mismatch is an error: the server never serves a build
// its list does not pin). A missing build is left out (its platform then
// needs an agent source of its own); no build at all is an error.
// Signatures are used when the public key and the build's .sig exist.
// baseURL must be https://HOST[:PORT] (no path, user information, query
// or fragment) and caCert a PEM bundle.
func LoadAgentStore(dir, baseURL string, caCert []byte) (*AgentStore, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("agent URL %q: must be https://HOST[:PORT], where machines reach the agent server", baseURL)
	}
	if !bytes.Contains(caCert, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, errors.New("agent server CA: no PEM certificate")
	}
	sums, err := readSmall(filepath.Join(dir, agentSumsFile))
	if err != nil {
		return nil, fmt.Errorf("agent builds: %w", err)
	}
	listed := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		if h, name, ok := strings.Cut(sc.Text(), "  "); ok {
			listed[name] = strings.ToLower(h)
		}
	}
	s := &AgentStore{BaseURL: strings.TrimRight(baseURL, "/"), CACert: caCert, Log: logr.Discard(), dir: dir,
		files: map[string]agentFile{}, served: map[string]string{agentSumsFile: filepath.Join(dir, agentSumsFile)}}
	if pub, err := readSmall(filepath.Join(dir, agentPublicKeyFile)); err == nil {
		s.publicKey = pub
		s.served[agentPublicKeyFile] = filepath.Join(dir, agentPublicKeyFile)
		if _, err := os.Stat(filepath.Join(dir, agentSumsFile+agentSigSuffix)); err == nil {
			s.served[agentSumsFile+agentSigSuffix] = filepath.Join(dir, agentSumsFile+agentSigSuffix)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for platform, name := range AgentPlatforms {
		p := filepath.Join(dir, name)
		sum, err := fileSHA256(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("agent build %s: %w", name, err)
		}
		if listed[name] != sum {
			return nil, fmt.Errorf("agent build %s: its SHA-256 is %s, %s lists %q: refusing to serve a build the list does not pin", name, sum, agentSumsFile, listed[name])
		}
		f := agentFile{name: name, path: p, sha256: sum}
		if _, err := os.Stat(p + agentSigSuffix); err == nil && s.publicKey != nil {
			f.signature = true
			s.served[name+agentSigSuffix] = p + agentSigSuffix
		}
		s.files[platform] = f
		s.served[name] = p
	}
	if len(s.files) == 0 {
		return nil, fmt.Errorf("agent builds: none of %v in %s", AgentPlatforms, dir)
	}
	return s, nil
}

// Platforms lists the platforms ("linux/amd64") the store serves.
func (s *AgentStore) Platforms() []string {
	var out []string
	for p := range s.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Source is the render agent source of the build for platform ("OS/ARCH"):
// its URL on the server, its digest, its signature and public key when it
// has one (Linux only: the Windows stubs check the digest), and the
// server's CA. ok is false when the store has no such build.
func (s *AgentStore) Source(platform string) (src render.AgentSource, ok bool) {
	f, ok := s.files[platform]
	if !ok {
		return render.AgentSource{}, false
	}
	src = render.AgentSource{URL: s.BaseURL + agentPathPrefix + f.name, SHA256: f.sha256}
	if !strings.HasPrefix(platform, "windows/") {
		src.CACert = s.CACert
		if f.signature {
			src.SignatureURL, src.PublicKey = src.URL+agentSigSuffix, s.publicKey
		}
	}
	return src, true
}

// ServeHTTP implements http.Handler.
func (s *AgentStore) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "GET an agent build", http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(req.URL.Path, agentPathPrefix)
	p, known := s.served[name]
	if !ok || !known {
		http.NotFound(w, req)
		return
	}
	f, err := os.Open(p)
	if err != nil {
		http.Error(w, "reading the build failed", http.StatusServiceUnavailable)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	start := time.Now()
	http.ServeContent(w, req, name, time.Time{}, f)
	s.Log.Info("served an agent file", "file", name, "method", req.Method, "remote", req.RemoteAddr, "duration", time.Since(start).String())
}

// fileSHA256 hashes the file at p.
func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readSmall reads a side file of at most maxAgentSideFile bytes.
func readSmall(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAgentSideFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxAgentSideFile {
		return nil, fmt.Errorf("%s: more than %d bytes", p, maxAgentSideFile)
	}
	return b, nil
}

// agentSource is the render agent source of cfg: its spec.agent, or, when
// that names no url, the build Agents serves for the config's platform
// (the OS of its format, spec.agent.architecture, default amd64). The
// error names the config's field.
func (r *Reconciler) agentSource(cfg *bootstrapv1.MachineadmConfig) (render.AgentSource, error) {
	a := cfg.Spec.Agent
	if a.URL != "" {
		return render.AgentSource{URL: a.URL, SHA256: a.SHA256}, nil
	}
	if r.Agents == nil {
		return render.AgentSource{}, errors.New("spec.agent.url: required: this machineadm-controller serves no agent builds (--agent-bind-address and --agent-url unset)")
	}
	arch := a.Architecture
	if arch == "" {
		arch = "amd64"
	}
	goos := "linux"
	if info, ok := render.LookupFormat(render.Format(format(cfg))); ok && info.OS == render.Windows {
		goos = "windows"
	}
	platform := goos + "/" + arch
	src, ok := r.Agents.Source(platform)
	if !ok {
		return render.AgentSource{}, fmt.Errorf("spec.agent.architecture: machineadm-controller serves no %s build (it serves %v); set spec.agent.url", platform, r.Agents.Platforms())
	}
	return src, nil
}
