package cpunits

import (
	"reflect"
	"strings"
	"testing"
)

func apiserver() Component {
	return Component{
		Name:                "kube-apiserver",
		Description:         "Kubernetes API server",
		Documentation:       "https://kubernetes.io/docs/reference/command-line-tools-reference/kube-apiserver/",
		Command:             []string{"/usr/local/bin/kube-apiserver", "--advertise-address=10.0.0.1", "--audit-log-path=/var/log/kubernetes/audit.log", "--tls-cipher-suites=a b", `--weird=%h$HOME"q\`, ";"},
		Env:                 []EnvVar{{"HTTPS_PROXY", `http://user:p@ss$w"rd@proxy:3128`}, {"NO_PROXY", "10.0.0.0/8"}},
		User:                "kubeadm-kas",
		Group:               "kubeadm-kas",
		SupplementaryGroups: []string{"kubeadm-sa-key-readers"},
		ReadWritePaths:      []string{"/var/log/kubernetes"},
		InaccessiblePaths:   []string{"/var/lib/etcd"},
		After:               []string{"etcd.service"},
	}
}

// splitExec parses an ExecStart= value back into argv by systemd's rules
// for the subset Render produces (systemd.service(5) "Command lines"):
// words separated by white space, double quotes with \\ and \" escapes,
// "%%" for "%" and "$$" for "$".
func splitExec(t *testing.T, v string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(v); i++ {
		ch := v[i]
		switch {
		case quoted && ch == '\\' && i+1 < len(v):
			i++
			cur.WriteByte(v[i])
		case quoted && ch == '"':
			quoted = false
		case quoted:
			cur.WriteByte(ch)
		case ch == '"':
			quoted, inWord = true, true
		case ch == ' ' || ch == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", v)
	}
	if inWord {
		out = append(out, cur.String())
	}
	for i, a := range out {
		if a == `\;` {
			out[i] = ";"
		}
		out[i] = strings.ReplaceAll(strings.ReplaceAll(out[i], "%%", "%"), "$$", "$")
	}
	return out
}

// unitValues returns the values of key in a unit file, continuation lines
// joined.
func unitValues(content, key string) []string {
	joined := strings.ReplaceAll(content, "\\\n\t", " ")
	var vals []string
	for _, l := range strings.Split(joined, "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			vals = append(vals, v)
		}
	}
	return vals
}

// ExecStart is the component's command exactly, through systemd's quoting.
func TestRenderExecStartRoundTrip(t *testing.T) {
	c := apiserver()
	fs, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	exec := unitValues(string(fs[0].Content), "ExecStart")
	if len(exec) != 1 {
		t.Fatalf("ExecStart lines: %q", exec)
	}
	if got := splitExec(t, exec[0]); !reflect.DeepEqual(got, c.Command) {
		t.Errorf("ExecStart parses to\n%q\nwant\n%q", got, c.Command)
	}
}

// The environment lives in a 0600 file, not in the unit; the unit keeps
// the hardening directives.
func TestRenderFiles(t *testing.T) {
	fs, err := Render(apiserver())
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].Path != "/etc/systemd/system/kube-apiserver.service" || fs[1].Path != "/etc/machineadm/units/kube-apiserver.env" {
		t.Fatalf("files: %+v", fs)
	}
	unit := string(fs[0].Content)
	if strings.Contains(unit, "p@ss") || !fs[1].Secret || fs[1].Mode != 0o600 || fs[0].Mode != 0o600 {
		t.Errorf("environment leaks into the unit or files are not 0600 secret:\n%s", unit)
	}
	for _, want := range []string{"User=kubeadm-kas", "SupplementaryGroups=kubeadm-sa-key-readers", "ReadWritePaths=/var/log/kubernetes",
		"InaccessiblePaths=-/var/lib/etcd", "CapabilityBoundingSet=\n", "NoNewPrivileges=yes", "ProtectSystem=strict", "Restart=always",
		"RestartSec=5\n", "StartLimitBurst=30", "After=network-online.target etcd.service", "EnvironmentFile=/etc/machineadm/units/kube-apiserver.env"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	if got, want := string(fs[1].Content), "HTTPS_PROXY=\"http://user:p@ss\\$w\\\"rd@proxy:3128\"\nNO_PROXY=\"10.0.0.0/8\"\n"; got != want {
		t.Errorf("env file\n%s\nwant\n%s", got, want)
	}
	c := apiserver()
	c.Env = nil
	if fs, _ := Render(c); len(fs) != 1 || strings.Contains(string(fs[0].Content), "EnvironmentFile") {
		t.Errorf("a component without environment gets an environment file")
	}
}

func TestRenderRefusesBadComponents(t *testing.T) {
	for name, mutate := range map[string]func(*Component){
		"relative binary":  func(c *Component) { c.Command[0] = "kube-apiserver" },
		"no command":       func(c *Component) { c.Command = nil },
		"newline argument": func(c *Component) { c.Command = append(c.Command, "--a=b\nExecStartPre=/bin/sh") },
		"bad name":         func(c *Component) { c.Name = "Kube API" },
		"bad env name":     func(c *Component) { c.Env = []EnvVar{{"A-B", "x"}} },
		"env newline":      func(c *Component) { c.Env = []EnvVar{{"A", "x\nB=y"}} },
		"bad user":         func(c *Component) { c.User = "root\nUser" },
		"relative rw path": func(c *Component) { c.ReadWritePaths = []string{"var/lib"} },
		"bad capability":   func(c *Component) { c.Capabilities = []string{"NET_ADMIN"} },
		"bad after":        func(c *Component) { c.After = []string{"etcd"} },
	} {
		c := apiserver()
		c.Command = append([]string{}, c.Command...)
		mutate(&c)
		if _, err := Render(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
