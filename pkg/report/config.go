package report

import (
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/version"
)

// Options are the settings of the report writers that the spec does not
// hold: where the host's root is, standard output, and test hooks.
type Options struct {
	// Root is prepended to every path a writer touches: "/" on a host, a
	// test directory in tests.
	Root string
	// Stdout receives the one-screen summary. nil: no summary writer.
	Stdout io.Writer
	// ConsoleDevices overrides DefaultConsoleDevices.
	ConsoleDevices []string
	// ConsoleTimeout overrides DefaultConsoleTimeout.
	ConsoleTimeout time.Duration
	// HTTPClient sends the report to spec.report.url. Default: Go's
	// default transport.
	HTTPClient *http.Client
	// Retry bounds the HTTP POST. Zero: RetryPolicy's defaults.
	Retry RetryPolicy
	// Extra writers run after the spec's, for example the Node annotation
	// writer (package nodeannotation) after a join.
	Extra []Writer
}

// WritersFor returns the writers that spec.report asks for (defaulted by
// the spec loader; empty fields take the same defaults here):
//   - the report file at path (default DefaultPath) with its previous copy;
//   - the one-screen summary on o.Stdout, when set;
//   - the summary on the serial console unless console is false;
//   - the Cluster API sentinel (default DefaultSentinel, "-" disables);
//   - an HTTP POST of the JSON when url is set;
//
// followed by o.Extra. The summaries name the report file where it is
// written: o.Root joined with path when o.Root is not "/" (a dry run's
// directory, prepare --root), so that the `machineadm report PATH` they
// suggest finds it.
func WritersFor(rep machineadm.Report, o Options) []Writer {
	path := rep.Path
	if path == "" {
		path = DefaultPath
	}
	shown := path
	if o.Root != "" && o.Root != "/" {
		shown = HostPath(o.Root, path)
	}
	ws := []Writer{&FileWriter{Root: o.Root, Path: path}}
	if o.Stdout != nil {
		ws = append(ws, &SummaryWriter{Out: o.Stdout, Options: OneScreen(shown)})
	}
	if rep.Console == nil || *rep.Console {
		ws = append(ws, &ConsoleWriter{Root: o.Root, Devices: o.ConsoleDevices, Timeout: o.ConsoleTimeout, Options: OneScreen(shown)})
	}
	ws = append(ws, &SentinelWriter{Root: o.Root, Path: rep.Sentinel})
	if rep.URL != "" {
		ws = append(ws, &HTTPWriter{URL: rep.URL, Client: o.HTTPClient, Retry: o.Retry, UserAgent: "machineadm/" + version.Version})
	}
	return append(ws, o.Extra...)
}

// MetaFor describes a run of command ("bootstrap" or "prepare") with the
// spec cfg. cfg may be nil when the spec could not be read: the report
// then names the embedded kubeadm's Kubernetes version and no role.
func MetaFor(cfg *machineadm.MachineBootstrapConfig, command string) Meta {
	host, _ := os.Hostname()
	m := Machine{Hostname: host, MachineadmVersion: version.Version}
	if cfg == nil {
		m.KubernetesVersion = version.Get().Kubernetes
		return Meta{Machine: m, Command: command}
	}
	s := &cfg.Spec
	m.SpecName, m.KubernetesVersion = cfg.Metadata.Name, s.Kubernetes.Version
	m.Role, m.Action = string(s.Role), string(s.Action)
	if command != "prepare" {
		m.NodeName = s.Node.Name
		if m.NodeName == "" {
			m.NodeName = strings.ToLower(host)
		}
	}
	return Meta{Machine: m, Command: command}
}
