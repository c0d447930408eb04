package cpunits_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/cpunits/cpunitstest"
)

func apiserver() cpunits.Component {
	return cpunits.Component{
		Name:                "kube-apiserver",
		Description:         "Kubernetes API server",
		Documentation:       "https://kubernetes.io/docs/reference/command-line-tools-reference/kube-apiserver/",
		Command:             []string{"/usr/local/bin/kube-apiserver", "--advertise-address=10.0.0.1", "--audit-log-path=/var/log/kubernetes/audit.log", "--tls-cipher-suites=a b", `--weird=%h$HOME"q\`, ";"},
		Env:                 []cpunits.EnvVar{{"HTTPS_PROXY", `http://user:p@ss$w"rd@proxy:3128`}, {"NO_PROXY", "10.0.0.0/8"}},
		User:                "kubeadm-kas",
		Group:               "kubeadm-kas",
		SupplementaryGroups: []string{"kubeadm-sa-key-readers"},
		ReadWritePaths:      []string{"/var/log/kubernetes"},
		InaccessiblePaths:   []string{"/var/lib/etcd"},
		After:               []string{"etcd.service"},
	}
}

// ExecStart is the component's command exactly, through systemd's quoting.
func TestRenderExecStartRoundTrip(t *testing.T) {
	c := apiserver()
	fs, err := cpunits.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cpunitstest.ParseExecStart(string(fs[0].Content))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c.Command) {
		t.Errorf("ExecStart parses to\n%q\nwant\n%q", got, c.Command)
	}
}

// The environment lives in a 0600 file, not in the unit; the unit keeps
// the hardening directives.
func TestRenderFiles(t *testing.T) {
	fs, err := cpunits.Render(apiserver())
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
		"RestartSec=5\n", "TimeoutStopSec=30\n", "StartLimitBurst=30", "After=network-online.target etcd.service", "EnvironmentFile=/etc/machineadm/units/kube-apiserver.env"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	if got, want := string(fs[1].Content), "HTTPS_PROXY=\"http://user:p@ss\\$w\\\"rd@proxy:3128\"\nNO_PROXY=\"10.0.0.0/8\"\n"; got != want {
		t.Errorf("env file\n%s\nwant\n%s", got, want)
	}
	if env, err := cpunitstest.ParseEnvFile(string(fs[1].Content)); err != nil || !reflect.DeepEqual(env, apiserver().Env) {
		t.Errorf("env file parses to %q (%v), want %q", env, err, apiserver().Env)
	}
	c := apiserver()
	c.Env = nil
	if fs, _ := cpunits.Render(c); len(fs) != 1 || strings.Contains(string(fs[0].Content), "EnvironmentFile") {
		t.Errorf("a component without environment gets an environment file")
	}
}

func TestRenderRefusesBadComponents(t *testing.T) {
	for name, mutate := range map[string]func(*cpunits.Component){
		"relative binary":  func(c *cpunits.Component) { c.Command[0] = "kube-apiserver" },
		"no command":       func(c *cpunits.Component) { c.Command = nil },
		"newline argument": func(c *cpunits.Component) { c.Command = append(c.Command, "--a=b\nExecStartPre=/bin/sh") },
		"bad name":         func(c *cpunits.Component) { c.Name = "Kube API" },
		"bad env name":     func(c *cpunits.Component) { c.Env = []cpunits.EnvVar{{"A-B", "x"}} },
		"env newline":      func(c *cpunits.Component) { c.Env = []cpunits.EnvVar{{"A", "x\nB=y"}} },
		"bad user":         func(c *cpunits.Component) { c.User = "root\nUser" },
		"relative rw path": func(c *cpunits.Component) { c.ReadWritePaths = []string{"var/lib"} },
		"bad capability":   func(c *cpunits.Component) { c.Capabilities = []string{"NET_ADMIN"} },
		"bad after":        func(c *cpunits.Component) { c.After = []string{"etcd"} },
	} {
		c := apiserver()
		c.Command = append([]string{}, c.Command...)
		mutate(&c)
		if _, err := cpunits.Render(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A credential's flag points into the credentials directory (%d, the one
// specifier left unescaped) and the unit loads the file; the stamp is a
// comment. Everything else in ExecStart stays escaped.
func TestRenderCredentials(t *testing.T) {
	c := apiserver()
	c.Command = append(c.Command, "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key", "--client-ca-file=/etc/kubernetes/pki/ca.crt")
	c.Credentials = []cpunits.Credential{{ID: "tls-private-key-file", Path: "/etc/kubernetes/pki/apiserver.key"}, {ID: "client-ca-file", Path: "/etc/kubernetes/pki/ca.crt"}}
	c.CredentialStamp = "abc123"
	fs, err := cpunits.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	unit := string(fs[0].Content)
	for _, want := range []string{"\t--tls-private-key-file=%d/tls-private-key-file \\\n", "\t--client-ca-file=%d/client-ca-file\n",
		"\nLoadCredential=tls-private-key-file:/etc/kubernetes/pki/apiserver.key\n", "\nLoadCredential=client-ca-file:/etc/kubernetes/pki/ca.crt\n",
		"\n# Credential files stamp: abc123\n", `--weird=%%h$$HOME`} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	if !strings.Contains(unit, "ExecStart=/usr/local/bin/kube-apiserver \\\n\t--advertise-address=10.0.0.1 \\\n") {
		t.Errorf("other arguments changed:\n%s", unit)
	}
	argv, err := cpunitstest.ParseExecStart(unit)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cpunitstest.ResolveCredentials(unit, argv)
	if err != nil || !reflect.DeepEqual(got, c.Command) {
		t.Errorf("resolved ExecStart\n%q (%v)\nwant\n%q", got, err, c.Command)
	}
}

// A credential must serve exactly one argument of the command, with an
// id and path systemd takes literally.
func TestRenderRefusesBadCredentials(t *testing.T) {
	for name, cr := range map[string][]cpunits.Credential{
		"no such argument": {{ID: "tls-cert-file", Path: "/etc/kubernetes/pki/apiserver.crt"}},
		"bad id":           {{ID: "A:B", Path: "/etc/kubernetes/pki/ca.crt"}},
		"relative path":    {{ID: "client-ca-file", Path: "pki/ca.crt"}},
		"space in path":    {{ID: "client-ca-file", Path: "/etc/kubernetes/pki/c a.crt"}},
		"twice":            {{ID: "client-ca-file", Path: "/etc/kubernetes/pki/ca.crt"}, {ID: "client-ca-file", Path: "/etc/kubernetes/pki/ca.crt"}},
	} {
		c := apiserver()
		c.Command = append(append([]string{}, c.Command...), "--client-ca-file=/etc/kubernetes/pki/ca.crt", "--client-ca-file=/x", "--c=pki/ca.crt")
		if name == "twice" || name == "bad id" {
			c.Command = c.Command[:len(c.Command)-2]
		}
		c.Credentials = cr
		if _, err := cpunits.Render(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	c := apiserver()
	c.Command = append(append([]string{}, c.Command...), "--client-ca-file=/etc/kubernetes/pki/ca.crt", "--client-ca-file=/etc/kubernetes/pki/ca.crt")
	c.Credentials = []cpunits.Credential{{ID: "client-ca-file", Path: "/etc/kubernetes/pki/ca.crt"}}
	if _, err := cpunits.Render(c); err == nil {
		t.Error("a credential serving two arguments was accepted")
	}
}

// The stamp follows a rewrite of a credential's file (a digest of its
// content, never the content) and is empty without credentials; Install restarts the unit
// when it changes.
func TestStampCredentials(t *testing.T) {
	root := t.TempDir()
	c := apiserver()
	c.Command = append(append([]string{}, c.Command...), "--client-ca-file=/etc/kubernetes/pki/ca.crt")
	if s, err := cpunits.StampCredentials(root, c); err != nil || s.CredentialStamp != "" {
		t.Fatalf("stamp without credentials %q, %v", s.CredentialStamp, err)
	}
	c.Credentials = []cpunits.Credential{{ID: "client-ca-file", Path: "/etc/kubernetes/pki/ca.crt"}}
	absent, err := cpunits.StampCredentials(root, c)
	if err != nil || absent.CredentialStamp == "" {
		t.Fatalf("stamp of an absent file %q, %v", absent.CredentialStamp, err)
	}
	hp := filepath.Join(root, "etc/kubernetes/pki/ca.crt")
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, _ := cpunits.StampCredentials(root, c)
	again, _ := cpunits.StampCredentials(root, c)
	if first.CredentialStamp == absent.CredentialStamp || first.CredentialStamp != again.CredentialStamp {
		t.Errorf("stamps absent %q, written %q, again %q", absent.CredentialStamp, first.CredentialStamp, again.CredentialStamp)
	}
	if err := os.WriteFile(hp, []byte("renewed"), 0o644); err != nil {
		t.Fatal(err)
	}
	renewed, _ := cpunits.StampCredentials(root, c)
	if renewed.CredentialStamp == first.CredentialStamp {
		t.Error("a rewritten credential file keeps the stamp")
	}
}

// A credential file rewritten with the same size and the same
// modification time (a renewal within the file system's timestamp
// granularity, a copy with cp -p) still changes the stamp.
func TestStampCredentialsSameSizeAndMtime(t *testing.T) {
	root := t.TempDir()
	c := apiserver()
	c.Command = append(append([]string{}, c.Command...), "--client-ca-file=/etc/kubernetes/pki/ca.crt")
	c.Credentials = []cpunits.Credential{{ID: "client-ca-file", Path: "/etc/kubernetes/pki/ca.crt"}}
	hp := filepath.Join(root, "etc/kubernetes/pki/ca.crt")
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, []byte("certificate-one"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(hp)
	if err != nil {
		t.Fatal(err)
	}
	first, err := cpunits.StampCredentials(root, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, []byte("certificate-two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(hp, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	renewed, err := cpunits.StampCredentials(root, c)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.CredentialStamp == first.CredentialStamp {
		t.Error("a credential file rewritten with the same size and mtime keeps the stamp, so its unit is not restarted")
	}
	if strings.Contains(renewed.CredentialStamp, "certificate") {
		t.Errorf("the stamp %q shows content", renewed.CredentialStamp)
	}
}
