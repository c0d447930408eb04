package session

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/report/nodeannotation"
)

// A real bootstrap annotates its Node after init as well as after join
// (the Cluster API provider reads the annotation of the first control
// plane too); a dry run, prepare and an invalid spec never do, and a dry
// run writes to no console, sentinel or URL.
func TestReportSettings(t *testing.T) {
	spec := func(a machineadm.Action) *machineadm.MachineBootstrapConfig {
		c := &machineadm.MachineBootstrapConfig{}
		c.Spec.Action = a
		c.Spec.Report.URL = "http://10.0.0.1:9445/reports/ns/name/cap"
		c.Spec.Report.Sentinel = "/run/cluster-api/bootstrap-success.complete"
		return c
	}
	for _, c := range []struct {
		name     string
		o        Options
		cfg      *machineadm.MachineBootstrapConfig
		annotate bool
		url      bool
		sentinel bool
	}{
		{"init", Options{Command: Bootstrap}, spec(machineadm.ActionInit), true, true, true},
		{"join", Options{Command: Bootstrap}, spec(machineadm.ActionJoin), true, true, true},
		{"dry run", Options{Command: Bootstrap, DryRun: true}, spec(machineadm.ActionInit), false, false, false},
		{"prepare", Options{Command: Prepare}, spec(machineadm.ActionJoin), false, true, false},
		{"invalid spec", Options{Command: Bootstrap}, nil, false, false, true},
	} {
		settings, opts := reportSettings(c.o, c.cfg, "/root")
		annotate := false
		for _, w := range opts.Extra {
			if nw, ok := w.(*nodeannotation.Writer); ok {
				annotate = true
				if nw.Root != "/root" {
					t.Errorf("%s: node annotation writer root %q", c.name, nw.Root)
				}
			}
		}
		if annotate != c.annotate {
			t.Errorf("%s: node annotation %v, want %v", c.name, annotate, c.annotate)
		}
		if (settings.URL != "") != c.url {
			t.Errorf("%s: report URL %q, want set: %v", c.name, settings.URL, c.url)
		}
		if (settings.Sentinel != "-") != c.sentinel {
			t.Errorf("%s: sentinel %q, want written: %v", c.name, settings.Sentinel, c.sentinel)
		}
		if c.o.DryRun && (settings.Console == nil || *settings.Console) {
			t.Errorf("%s: a dry run writes to the console", c.name)
		}
	}
}

// The run's log file shows each final report writer's duration, the Node
// annotation's included (debug level): where a run's time after its last
// phase went.
func TestFinishLogsWriters(t *testing.T) {
	root := t.TempDir()
	cfg := &machineadm.MachineBootstrapConfig{}
	cfg.Spec.Action = machineadm.ActionJoin
	cfg.Spec.Node.Name = "w1"
	no := false
	cfg.Spec.Report.Console = &no
	cfg.Spec.Report.Sentinel = "-"
	r := startRecord(Options{Command: Bootstrap, LogFile: true, Out: io.Discard}, cfg, root)
	r.logFile.open()
	r.finish()
	data, err := os.ReadFile(r.logPath())
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	for _, want := range []string{`msg="outcome report: writer done" writer=file`, `msg="outcome report: writer done" writer=node-annotation`, "loading kubeconfig"} {
		if !strings.Contains(log, want) {
			t.Errorf("log file lacks %q:\n%s", want, log)
		}
	}
}
