package render

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// testRegistry is a stand-in for a container registry's pull path, on
// 127.0.0.1 (the e2e runs the real distribution registry): GET
// /v2/NAME/blobs/sha256:HEX answers 401 with a Bearer challenge unless the
// request carries a token that /token issued for that repository's pull
// scope; /token issues one anonymously when service and scope are the
// challenge's. With a storage server, an authorised blob request is
// redirected there (307), as registries on object storage do; storage
// refuses any request that carries an Authorization header.
type testRegistry struct {
	srv, storage *httptest.Server
	service      string

	mu      sync.Mutex
	blobs   map[string][]byte // digest hex -> content
	tokens  map[string]string // token -> scope
	hits    map[string]int    // "blob", "token", "401", "storage", "storage-with-auth"
	lastTok string
	// tokenStatus, when not 0, is the token service's answer status.
	tokenStatus int
	// location, when set, is the Location of the redirect to storage,
	// from the storage server's URL and the blob's digest hex (a
	// registry that answers a relative or hostile Location).
	location func(storage, hex string) string
}

// newTestRegistry starts a registry (TLS when tls) serving blobs (content
// by digest); with redirect, blobs are served from a storage server.
func newTestRegistry(t *testing.T, tls, redirect bool, blobs ...[]byte) *testRegistry {
	t.Helper()
	reg := &testRegistry{service: "test registry", blobs: map[string][]byte{}, tokens: map[string]string{}, hits: map[string]int{}}
	for _, b := range blobs {
		reg.blobs[sha256Hex(b)] = b
	}
	blobRE := regexp.MustCompile(`^/v2/(.+)/blobs/sha256:([0-9a-f]{64})$`)
	mux := http.NewServeMux()
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		reg.hits["token"]++
		q := r.URL.Query()
		if reg.tokenStatus != 0 {
			http.Error(w, "token service down", reg.tokenStatus)
			return
		}
		if q.Get("service") != reg.service || !strings.HasPrefix(q.Get("scope"), "repository:") || r.Header.Get("Authorization") != "" {
			http.Error(w, fmt.Sprintf("bad token request %q", r.URL.RawQuery), http.StatusBadRequest)
			return
		}
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		tok := "tok." + hex.EncodeToString(b)
		reg.tokens[tok] = q.Get("scope")
		reg.lastTok = tok
		w.Header().Set("Content-Type", "application/json")
		// Pretty-printed over several lines, as some token services answer.
		fmt.Fprintf(w, "{\n  \"token\": %q,\n  \"access_token\": %q,\n  \"expires_in\": 300\n}\n", tok, tok)
	})
	mux.HandleFunc("/v2/", func(w http.ResponseWriter, r *http.Request) {
		m := blobRE.FindStringSubmatch(r.URL.Path)
		if m == nil {
			http.NotFound(w, r)
			return
		}
		scope := "repository:" + m[1] + ":pull"
		reg.mu.Lock()
		reg.hits["blob"]++
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		granted := reg.tokens[tok] == scope
		body, ok := reg.blobs[m[2]]
		if !granted {
			reg.hits["401"]++
		}
		reg.mu.Unlock()
		switch {
		case !granted:
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service=%q,scope=%q`, reg.base()+"/token", reg.service, scope))
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		case !ok:
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
		case reg.storage != nil && reg.location != nil:
			w.Header().Set("Location", reg.location(reg.storage.URL, m[2]))
			w.WriteHeader(http.StatusTemporaryRedirect)
		case reg.storage != nil:
			http.Redirect(w, r, reg.storage.URL+"/blobs/"+m[2], http.StatusTemporaryRedirect)
		default:
			_, _ = w.Write(body)
		}
	})
	if tls {
		reg.srv = httptest.NewTLSServer(mux)
	} else {
		reg.srv = httptest.NewServer(mux)
	}
	t.Cleanup(reg.srv.Close)
	if redirect {
		reg.storage = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reg.mu.Lock()
			reg.hits["storage"]++
			if r.Header.Get("Authorization") != "" {
				reg.hits["storage-with-auth"]++
			}
			body, ok := reg.blobs[strings.TrimPrefix(r.URL.Path, "/blobs/")]
			reg.mu.Unlock()
			if !ok || r.Header.Get("Authorization") != "" {
				http.Error(w, "no", http.StatusBadRequest)
				return
			}
			_, _ = w.Write(body)
		}))
		t.Cleanup(reg.storage.Close)
	}
	return reg
}

func (reg *testRegistry) base() string { return reg.srv.URL }

// host is the registry's host:port.
func (reg *testRegistry) host() string {
	return strings.TrimPrefix(strings.TrimPrefix(reg.srv.URL, "https://"), "http://")
}

// ref is the oci:// reference of blob in repo.
func (reg *testRegistry) ref(repo string, blob []byte) string {
	return "oci://" + reg.host() + "/" + repo + "@sha256:" + sha256Hex(blob)
}

// blobURL is the http(s) blob URL of blob in repo.
func (reg *testRegistry) blobURL(repo string, blob []byte) string {
	return reg.base() + "/v2/" + repo + "/blobs/sha256:" + sha256Hex(blob)
}

func (reg *testRegistry) count(what string) int {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.hits[what]
}

// put replaces the content served under blob's digest (a tampered
// registry).
func (reg *testRegistry) put(digest string, content []byte) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.blobs[digest] = content
}

func (reg *testRegistry) token() string {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.lastTok
}

// caEnv is the environment that makes curl trust the TLS registry.
func (reg *testRegistry) caEnv(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: reg.srv.Certificate().Raw})
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return "CURL_CA_BUNDLE=" + p
}

// argRecorder puts wrappers of curl and wget first on a PATH: each records
// its command line (one argument a line) and, for an argument naming a
// header or config file (-H @FILE, --config=FILE), that file's mode, then
// runs the real tool. It returns the PATH and the record file.
func argRecorder(t *testing.T, path string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	rec := filepath.Join(t.TempDir(), "args")
	for _, tool := range []string{"curl", "wget"} {
		real, err := lookPath(tool)
		if err != nil {
			continue
		}
		w := fmt.Sprintf(`#!/bin/sh
for a in "$@"; do
	printf '%%s\n' "$a" >>%[1]s
	case $a in
	@*) stat -c 'mode %%a' "${a#@}" >>%[1]s ;;
	--config=*) stat -c 'mode %%a' "${a#--config=}" >>%[1]s ;;
	esac
done
exec %[2]s "$@"
`, shq(rec), shq(real))
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(w), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return dir + ":" + path, rec
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// checkTokenKept asserts that the registry's token appears in no recorded
// command line and not in the stub's output, and that every header or
// config file a tool read had mode 600.
func checkTokenKept(t *testing.T, reg *testRegistry, rec string, r *stubRun) {
	t.Helper()
	tok := reg.token()
	if tok == "" {
		t.Fatal("the registry issued no token")
	}
	args, err := os.ReadFile(rec)
	if err != nil {
		t.Fatalf("no tool ran: %v", err)
	}
	if strings.Contains(string(args), tok) {
		t.Errorf("the token appears on a command line:\n%s", args)
	}
	if strings.Contains(r.stderr, tok) || strings.Contains(r.stderr, "Bearer tok.") {
		t.Errorf("the stub's output shows the token:\n%s", r.stderr)
	}
	modes := regexp.MustCompile(`(?m)^mode (\d+)$`).FindAllStringSubmatch(string(args), -1)
	if len(modes) == 0 {
		t.Errorf("no tool read the token from a file:\n%s", args)
	}
	for _, m := range modes {
		if m[1] != "600" {
			t.Errorf("a token file had mode %s, want 600", m[1])
		}
	}
}

// TestShellStubRegistry: the shell stub fetches the agent from an oci://
// reference over HTTPS (curl), answering the registry's Bearer challenge;
// the token never reaches a command line, the output or a file left
// behind, and is not carried along the redirect to the blob's storage.
func TestShellStubRegistry(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	for _, redirect := range []bool{false, true} {
		t.Run(fmt.Sprintf("redirect=%v", redirect), func(t *testing.T) {
			reg := newTestRegistry(t, true, redirect, agent)
			script := shellFor(t, spec, Options{Agent: AgentSource{URL: reg.ref("machineadm/agent", agent)}})
			path, rec := argRecorder(t, os.Getenv("PATH"))
			r := runStub(t, script, reg.caEnv(t), "PATH="+path)
			installed := filepath.Join(r.root, LinuxAgentPath)
			checkBootstrapped(t, r, installed, spec)
			noTemp(t, installed)
			checkTokenKept(t, reg, rec, r)
			if reg.count("401") != 1 || reg.count("token") != 1 || reg.count("blob") != 2 {
				t.Errorf("registry saw %v; want one 401, one token request, two blob requests", reg.hits)
			}
			if redirect && (reg.count("storage") != 1 || reg.count("storage-with-auth") != 0) {
				t.Errorf("storage saw %v; want one request, without the token", reg.hits)
			}
			wantStderr(t, r, reg.base()+"/v2/machineadm/agent/blobs/sha256:"+sha256Hex(agent)+": attempt 1 of 3")
		})
	}
}

// TestShellStubRegistryWget: the same with GNU Wget and no curl, from a
// plain-http registry named by its blob URL.
func TestShellStubRegistryWget(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"sh", "date", "sha256sum", "cut", "mkdir", "mv", "chmod", "rm", "base64", "gzip", "wget", "sleep", "cp", "printf", "cat",
		"grep", "sed", "tr", "tail", "od", "stat"} {
		p, err := lookPath(tool)
		if err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	reg := newTestRegistry(t, false, true, agent)
	script := shellFor(t, spec, Options{Agent: AgentSource{URL: reg.blobURL("machineadm/agent", agent)}})
	path, rec := argRecorder(t, bin)
	r := runStub(t, script, "PATH="+path)
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
	checkTokenKept(t, reg, rec, r)
	if reg.count("storage") != 1 || reg.count("storage-with-auth") != 0 {
		t.Errorf("storage saw %v; want one request, without the token", reg.hits)
	}
	if args, _ := os.ReadFile(rec); strings.Contains(string(args), "curl") {
		t.Errorf("curl ran although it is not on PATH")
	}
}

// TestShellStubRegistryRefuses: a registry serving other content under the
// pinned digest (tampered), a token service that fails, and a missing blob
// all stop the stub before anything runs, with bounded retries.
func TestShellStubRegistryRefuses(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)

	t.Run("tampered", func(t *testing.T) {
		reg := newTestRegistry(t, true, false, agent)
		reg.put(sha256Hex(agent), append([]byte(testAgentScript), "tampered\n"...))
		script := shellFor(t, spec, Options{Agent: AgentSource{URL: reg.ref("machineadm/agent", agent)}})
		r := runStub(t, script, reg.caEnv(t))
		if r.exitCode == 0 || r.ran() {
			t.Fatalf("stub exit %d, agent ran %v: a tampered blob must not run; stderr:\n%s", r.exitCode, r.ran(), r.stderr)
		}
		wantStderr(t, r, "agent: SHA-256 digest is ", "expected "+sha256Hex(agent))
		noFile(t, filepath.Join(r.root, LinuxAgentPath))
		noTemp(t, filepath.Join(r.root, LinuxAgentPath))
		noFile(t, filepath.Join(r.root, LinuxSpecPath))
	})
	t.Run("token-service-down", func(t *testing.T) {
		reg := newTestRegistry(t, true, false, agent)
		reg.tokenStatus = http.StatusInternalServerError
		script := shellFor(t, spec, Options{Agent: AgentSource{URL: reg.ref("machineadm/agent", agent)}})
		r := runStub(t, script, reg.caEnv(t))
		if r.exitCode == 0 || r.ran() {
			t.Fatalf("stub exit %d, agent ran %v", r.exitCode, r.ran())
		}
		wantStderr(t, r, "attempt 1 failed: token service "+reg.base()+"/token: HTTP 500", "download failed 3 times")
		if n := reg.count("token"); n != 3 {
			t.Errorf("token service asked %d times, want 3 (MACHINEADM_FETCH_ATTEMPTS)", n)
		}
		noTemp(t, filepath.Join(r.root, LinuxAgentPath))
	})
	t.Run("unknown-blob", func(t *testing.T) {
		reg := newTestRegistry(t, true, false)
		script := shellFor(t, spec, Options{Agent: AgentSource{URL: reg.ref("machineadm/agent", agent)}})
		r := runStub(t, script, reg.caEnv(t))
		if r.exitCode == 0 || r.ran() {
			t.Fatalf("stub exit %d, agent ran %v", r.exitCode, r.ran())
		}
		wantStderr(t, r, "attempt 1 failed: HTTP 404", "download failed 3 times")
	})
	t.Run("no-bearer-challenge", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			http.Error(w, "login", http.StatusUnauthorized)
		}))
		t.Cleanup(srv.Close)
		url := srv.URL + "/v2/machineadm/agent/blobs/sha256:" + sha256Hex(agent)
		script := shellFor(t, spec, Options{Agent: AgentSource{URL: url}})
		r := runStub(t, script)
		if r.exitCode == 0 || r.ran() {
			t.Fatalf("stub exit %d, agent ran %v", r.exitCode, r.ran())
		}
		wantStderr(t, r, "attempt 1 failed: HTTP 401 without a Bearer challenge")
	})
}

// TestShellStubRegistrySignature: the agent and its signature both come
// from the registry as blobs; the signature is checked with openssl.
func TestShellStubRegistrySignature(t *testing.T) {
	if _, err := lookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	key := testSigner(t)
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	good, wrong := sign(t, key, agent), sign(t, key, []byte("another build"))
	reg := newTestRegistry(t, true, false, agent, good, wrong)
	for name, sig := range map[string][]byte{"good": good, "wrong": wrong} {
		t.Run(name, func(t *testing.T) {
			script := shellFor(t, spec, Options{Agent: AgentSource{
				URL: reg.ref("machineadm/agent", agent), SignatureURL: reg.ref("machineadm/agent", sig), PublicKey: publicPEM(t, key),
			}})
			r := runStub(t, script, reg.caEnv(t))
			if name == "good" {
				checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
				return
			}
			if r.exitCode == 0 || r.ran() {
				t.Fatalf("stub exit %d, agent ran %v with a wrong signature", r.exitCode, r.ran())
			}
			wantStderr(t, r, "signature does not verify")
		})
	}
}

// TestIgnitionRegistryFetchScript: for a registry agent the Ignition config
// carries no agent file (Ignition cannot answer the challenge) but the
// fetch script, run first by the unit's drop-in; run with dash against the
// test registry it installs the verified agent and runs nothing else, and
// it refuses a tampered blob.
func TestIgnitionRegistryFetchScript(t *testing.T) {
	spec, cfg := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	reg := newTestRegistry(t, true, true, agent)
	out := mustRender(t, spec, cfg, Options{Format: FormatIgnition, Agent: AgentSource{URL: reg.ref("machineadm/agent", agent)}})
	ign := parseIgnition(t, out)
	for _, f := range ign.Storage.Files {
		switch f.Path {
		case IgnitionAgentPath:
			t.Errorf("the config has Ignition fetch the agent from %v; it cannot answer a Bearer challenge", *f.Contents.Source)
		case ignitionFetchPath:
			if f.Mode == nil || *f.Mode != 0o700 {
				t.Errorf("%s mode %v, want 0700", f.Path, f.Mode)
			}
		}
	}
	script := ignitionFile(t, out, ignitionFetchPath)
	dropin := *ign.Systemd.Units[0].Dropins[0].Contents
	fetch, check := strings.Index(dropin, "ExecStartPre=/bin/sh "+ignitionFetchPath+"\n"), strings.Index(dropin, "ExecStartPre=/usr/bin/sha256sum --check")
	if fetch < 0 || check < fetch {
		t.Errorf("the drop-in must fetch first, then check the digest:\n%s", dropin)
	}
	r := runStub(t, script, reg.caEnv(t))
	if r.exitCode != 0 || r.ran() {
		t.Fatalf("fetch script exit %d, ran the agent %v; stderr:\n%s", r.exitCode, r.ran(), r.stderr)
	}
	installed := filepath.Join(r.root, IgnitionAgentPath)
	if got, err := os.ReadFile(installed); err != nil || string(got) != string(agent) {
		t.Fatalf("installed agent %q, %v", got, err)
	}
	checkMode(t, installed, 0o755)
	noFile(t, filepath.Join(r.root, LinuxSpecPath))

	reg.put(sha256Hex(agent), []byte("tampered"))
	r = runStub(t, script, reg.caEnv(t))
	if r.exitCode == 0 {
		t.Fatalf("the fetch script accepted a tampered blob; stderr:\n%s", r.stderr)
	}
	noFile(t, filepath.Join(r.root, IgnitionAgentPath))
}

// TestPowerShellRegistry: the PowerShell stub for a registry agent carries
// the Bearer handshake (there is no PowerShell here to run it: the golden
// file holds the script), and a plain agent's stub does not.
func TestPowerShellRegistry(t *testing.T) {
	spec, cfg := loadExample(t, "worker")
	agent := []byte("machineadm.exe")
	ref := "oci://registry.example.com/machineadm/agent@sha256:" + sha256Hex(agent)
	out := string(mustRender(t, spec, cfg, Options{Format: FormatPowerShell, Agent: AgentSource{URL: ref}}))
	for _, want := range []string{
		"[string]$AgentUrl = 'https://registry.example.com/v2/machineadm/agent/blobs/sha256:" + sha256Hex(agent) + "'",
		"[string]$AgentSha256 = '" + sha256Hex(agent) + "'",
		"function Get-RegistryToken(",
		"Invoke-Download $Url $OutFile $left",
		`-Headers @{ Authorization = "Bearer $token" }`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the stub lacks %q", want)
		}
	}
	plain := string(mustRender(t, spec, cfg, Options{Format: FormatPowerShell, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}}))
	if strings.Contains(plain, "Get-RegistryToken") {
		t.Error("a stub for a plain URL carries the registry handshake")
	}
}

// testSigner is a fresh ECDSA P-256 key.
func testSigner(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestShellStubRegistryAnonymous: a registry that serves blobs without a
// challenge (no auth configured) works the same, with one request.
func TestShellStubRegistryAnonymous(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	path := "/v2/machineadm/agent/blobs/sha256:" + sha256Hex(agent)
	srv := newAgentServer(t, map[string][]byte{path: agent})
	r := runStub(t, shellFor(t, spec, Options{Agent: AgentSource{URL: srv.URL + path}}))
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
	if n := srv.count(path); n != 1 {
		t.Errorf("blob requested %d times, want 1", n)
	}
}

// TestShellStubRegistryRedirectLocation: the Location a registry answers
// the authorised blob request with is the registry's word, not a command
// line: a scheme-relative one ("//host/path") is resolved against the
// registry's scheme, and one that is not http(s) (another scheme, or
// text curl or wget would take for an option) is refused without reaching
// the tools' command lines.
func TestShellStubRegistryRedirectLocation(t *testing.T) {
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	t.Run("scheme-relative", func(t *testing.T) {
		reg := newTestRegistry(t, false, true, agent)
		reg.location = func(storage, hex string) string { return strings.TrimPrefix(storage, "http:") + "/blobs/" + hex }
		script := shellFor(t, spec, Options{Agent: AgentSource{URL: reg.blobURL("machineadm/agent", agent)}})
		r := runStub(t, script)
		checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
		if reg.count("storage") != 1 || reg.count("storage-with-auth") != 0 {
			t.Errorf("storage saw %v; want one request, without the token", reg.hits)
		}
	})
	for _, loc := range []string{"-V", "--output=/tmp/x", "file:///etc/hostname", "ftp://127.0.0.1/blob"} {
		t.Run(loc, func(t *testing.T) {
			reg := newTestRegistry(t, false, true, agent)
			reg.location = func(string, string) string { return loc }
			script := shellFor(t, spec, Options{Agent: AgentSource{URL: reg.blobURL("machineadm/agent", agent)}})
			path, rec := argRecorder(t, os.Getenv("PATH"))
			r := runStub(t, script, "PATH="+path)
			if r.exitCode == 0 || r.ran() {
				t.Fatalf("stub exit %d, agent ran %v; stderr:\n%s", r.exitCode, r.ran(), r.stderr)
			}
			wantStderr(t, r, "attempt 1 failed: HTTP 307: the registry redirects to a location that is not http(s)", "download failed 3 times")
			args, _ := os.ReadFile(rec)
			for _, a := range strings.Split(string(args), "\n") {
				if a == loc {
					t.Errorf("the Location %q reached a command line", loc)
				}
			}
			if reg.count("storage") != 0 {
				t.Errorf("storage saw %v", reg.hits)
			}
		})
	}
}
