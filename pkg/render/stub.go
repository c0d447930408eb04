package render

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/base64"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"text/template"

	"github.com/machineadm/machineadm/pkg/render/quote"
)

// Install locations on the machine. Tests move the Linux ones under a
// temporary root with the stub's MACHINEADM_PREFIX environment variable.
const (
	// LinuxAgentPath is where the Linux stub installs the agent.
	LinuxAgentPath = "/usr/local/bin/machineadm"
	// IgnitionAgentPath is where the Ignition config installs the agent:
	// /usr is read-only on Fedora CoreOS and Flatcar, /opt/bin is writable
	// on both.
	IgnitionAgentPath = "/opt/bin/machineadm"
	// LinuxSpecPath is where the machine spec is written (mode 0600).
	LinuxSpecPath = "/etc/machineadm/spec.yaml"
	// CloudConfigStubPath is where the cloud-config writes the stub script.
	CloudConfigStubPath = "/var/lib/machineadm/stub.sh"
	// WindowsAgentPath is where the PowerShell stub installs the agent.
	WindowsAgentPath = `C:\Program Files\machineadm\machineadm.exe`
	// WindowsSpecPath is where the PowerShell stub writes the spec, in a
	// directory readable by SYSTEM and Administrators only.
	WindowsSpecPath = `C:\ProgramData\machineadm\spec.yaml`
	// WindowsReportPath is the outcome report the PowerShell stub reads
	// after a run (spec.report.path's Windows default) to see whether the
	// domain join asked for a reboot (errorClass RebootRequired).
	WindowsReportPath = `C:\ProgramData\machineadm\report.json`
)

// Retry defaults of the stubs' downloads. The Linux stub reads overrides
// from MACHINEADM_FETCH_ATTEMPTS, MACHINEADM_FETCH_DELAY (seconds) and
// MACHINEADM_FETCH_TIMEOUT (seconds, for all downloads together).
const (
	// FetchAttempts is how often one download is tried.
	FetchAttempts = 10
	// FetchDelaySeconds is the first pause between attempts; it doubles up
	// to FetchMaxDelaySeconds.
	FetchDelaySeconds = 2
	// FetchTimeoutSeconds bounds the time of all downloads together.
	FetchTimeoutSeconds = 600
	// FetchMaxDelaySeconds caps the pause between attempts.
	FetchMaxDelaySeconds = 60
)

//go:embed templates
var templateFS embed.FS

// templates are the stub scripts' templates, parsed on first use (most
// commands render nothing).
var templates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"sq":      quote.Sh,
		"psq":     quote.PowerShell,
		"psclass": quote.PowerShellQuoteClass,
		"xml":     xmlEscape,
	}).ParseFS(templateFS, "templates/*.tmpl"))
})

// stub holds what a stub script needs, shared by every format.
type stub struct {
	// reportPath is the spec's spec.report.path ("" for the default):
	// ReportPath.
	reportPath string
	// AgentURL is the download URL; empty for an agent in the image.
	AgentURL string
	// AgentSHA256 is the pinned digest (may be empty only when InImage).
	AgentSHA256 string
	// AgentPath is the install path, or the in-image path when InImage.
	AgentPath string
	// InImage means the agent is already in the image at AgentPath.
	InImage bool
	// SignatureURL and PublicKeyPEM enable signature verification.
	SignatureURL string
	PublicKeyPEM string
	// AgentCA is the PEM bundle the agent and signature downloads are
	// verified against; empty for the machine's trust store.
	AgentCA string
	// SpecPath is where the spec is written.
	SpecPath string
	// SpecB64 is the inline spec, gzip-compressed and base64-encoded in
	// lines of 76 characters; empty when the spec comes another way.
	SpecB64 string
	// PayloadURL and PayloadSHA256 fetch the spec.
	PayloadURL    string
	PayloadSHA256 string
	// Standalone adds an explanatory header; the cloud-config, which must
	// stay small, carries the script without it.
	Standalone bool
	// Registry makes every download answer a container registry's
	// anonymous Bearer challenge (the agent or its signature is a registry
	// blob).
	Registry bool
	// FetchOnly makes the shell script stop once the agent is installed
	// (Ignition's fetch script: Ignition writes the spec, the unit runs
	// the agent).
	FetchOnly bool
}

// Attempts, Delay, Timeout and MaxDelay give the templates the retry
// defaults.
func (s *stub) Attempts() int { return FetchAttempts }
func (s *stub) Delay() int    { return FetchDelaySeconds }
func (s *stub) Timeout() int  { return FetchTimeoutSeconds }
func (s *stub) MaxDelay() int { return FetchMaxDelaySeconds }

// ReportPath is the report the Windows stub reads after bootstrap: the
// spec's spec.report.path, where the agent writes it, else
// WindowsReportPath.
func (s *stub) ReportPath() string {
	if s.reportPath != "" {
		return s.reportPath
	}
	return WindowsReportPath
}

// Fetches reports whether the stub downloads anything.
func (s *stub) Fetches() bool { return !s.InImage || s.PayloadURL != "" }

// newStub builds the stub's data. specInline says whether the stub writes
// the spec itself (false when the bootstrapper writes it).
func newStub(r *resolved, spec []byte, agentPath, specPath string, specInline bool) *stub {
	s := &stub{
		AgentURL:     r.Agent.URL,
		AgentSHA256:  r.Agent.SHA256,
		AgentPath:    agentPath,
		SignatureURL: r.Agent.SignatureURL,
		PublicKeyPEM: r.publicKeyPEM,
		SpecPath:     specPath,
		Registry:     r.registry,
		AgentCA:      r.caPEM,
		reportPath:   r.reportPath,
	}
	if r.agentPath != "" {
		s.AgentURL, s.AgentPath, s.InImage = "", r.agentPath, true
	}
	switch {
	case r.Payload != nil:
		s.PayloadURL, s.PayloadSHA256 = r.Payload.URL, r.Payload.SHA256
	case specInline:
		s.SpecB64 = wrap(gzipBase64(spec), 76)
	}
	return s
}

// execute runs the named template with data.
func execute(name string, data any) ([]byte, error) {
	var b bytes.Buffer
	if err := templates().ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// gzipData compresses data with a fixed header (no name, no time) so the
// output is reproducible. A writer another compression left idle is
// reused (Reset gives the same output as a new one).
func gzipData(data []byte) []byte {
	compressing <- struct{}{}
	defer func() { <-compressing }()
	var b bytes.Buffer
	var zw *gzip.Writer
	select {
	case zw = <-idleGzip:
		zw.Reset(&b)
	default:
		zw, _ = gzip.NewWriterLevel(&b, gzip.BestCompression) // the level is valid
	}
	_, _ = zw.Write(data) // writes to a bytes.Buffer do not fail
	_ = zw.Close()
	zw.Reset(io.Discard) // b is the caller's now
	select {
	case idleGzip <- zw:
	default:
	}
	return b.Bytes()
}

// compressing holds one slot per compression running: compression is
// CPU-bound, so more at once than the CPUs run only hold more writers in
// memory together (concurrent reconciles render at once).
var compressing = make(chan struct{}, runtime.GOMAXPROCS(0))

// idleGzip keeps at most two writers between compressions. Each holds
// about a megabyte of state: making one per compression was 1.5 GB of
// allocations over 1,000 renders in `make bench-capi` and a third of
// machineadm-controller's CPU time (the collector's, mostly), while two
// idle writers did not raise its peak resident memory there. A fixed
// bound rather than one per CPU: on a large management node the idle
// writers stay two megabytes.
var idleGzip = make(chan *gzip.Writer, 2)

// gzipBase64 compresses data and encodes it in standard base64.
func gzipBase64(data []byte) string {
	return base64.StdEncoding.EncodeToString(gzipData(data))
}

// wrap breaks s into lines of at most n characters.
func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n])
		b.WriteByte('\n')
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}
