package domainjoin

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/domainjoin/netapi"
)

func credsJoin() *machineadm.DomainJoin {
	return &machineadm.DomainJoin{
		Domain:             "Corp.Example.com",
		OrganizationalUnit: "OU=K8s,DC=corp,DC=example,DC=com",
		Credentials:        &machineadm.DomainCredentials{Username: "joiner", Password: machineadm.SecretSource{Value: "p4ss-w0rd"}},
		Linux:              &machineadm.LinuxDomainJoin{Keytab: "/etc/krb5.keytab"},
	}
}

func TestNewPlanAndArgs(t *testing.T) {
	p := NewPlan(credsJoin())
	if p.Domain != "corp.example.com" || p.Realm != "CORP.EXAMPLE.COM" || p.Method != MethodCredentials || p.NetBIOSGuess() != "CORP" {
		t.Fatalf("plan %+v", p)
	}
	p.DomainController = "10.0.0.2"
	args := JoinArgs(p, "/r/etc/krb5.keytab")
	for _, want := range []string{"join", "--stdin-password", "--login-user=joiner", "--host-keytab=/r/etc/krb5.keytab", "--domain-ou=OU=K8s,DC=corp,DC=example,DC=com", "--domain-controller=10.0.0.2", "--domain-realm=CORP.EXAMPLE.COM"} {
		if !slices.Contains(args, want) {
			t.Errorf("join args %q lack %q", args, want)
		}
	}
	if strings.Contains(strings.Join(args, " "), "p4ss") {
		t.Error("the password is on adcli's command line")
	}
	p.Username = `CORP\joiner`
	if got := JoinArgs(p, "k"); !slices.Contains(got, "--login-user=joiner") {
		t.Errorf("DOMAIN\\user not stripped for adcli: %q", got)
	}
	if got := TestJoinArgs(p, "k"); got[0] != "testjoin" || !slices.Contains(got, "--domain-controller=10.0.0.2") {
		t.Errorf("testjoin args %q", got)
	}
	if got := JoinAccount(&Plan{Domain: "corp.example.com", Username: "joiner"}); got != `corp.example.com\joiner` {
		t.Errorf("JoinAccount = %q", got)
	}
	if got := JoinAccount(&Plan{Username: "joiner@CORP.EXAMPLE.COM"}); got != "joiner@CORP.EXAMPLE.COM" {
		t.Errorf("JoinAccount UPN = %q", got)
	}
	if got := JoinDomainTarget(p); got != `corp.example.com\10.0.0.2` {
		t.Errorf("JoinDomainTarget = %q", got)
	}
}

func TestDecide(t *testing.T) {
	p := NewPlan(credsJoin())
	for _, tc := range []struct {
		name string
		m    Membership
		want Action
		err  bool
	}{
		{"not joined", Membership{}, ActionJoin, false},
		{"joined by DNS name", Membership{Joined: true, Names: []string{"CORP.EXAMPLE.COM."}}, ActionNone, false},
		{"joined by NetBIOS name", Membership{Joined: true, Names: []string{"corp"}}, ActionNone, false},
		{"joined, reboot pending", Membership{Joined: true, Names: []string{"CORP"}, RebootPending: true}, ActionAwaitReboot, false},
		{"other domain", Membership{Joined: true, Names: []string{"OTHER", "other.example.org"}}, ActionJoin, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(p, tc.m)
			if (err != nil) != tc.err || (err == nil && got != tc.want) {
				t.Fatalf("Decide = %v, %v", got, err)
			}
			if tc.err && !errors.Is(err, ErrOtherDomain) {
				t.Errorf("err %v is not ErrOtherDomain", err)
			}
		})
	}
}

func TestConfs(t *testing.T) {
	p := NewPlan(credsJoin())
	k := string(Krb5Conf(p))
	for _, want := range []string{"default_realm = CORP.EXAMPLE.COM", "dns_lookup_kdc = true", "default_keytab_name = FILE:/etc/krb5.keytab", ".corp.example.com = CORP.EXAMPLE.COM"} {
		if !strings.Contains(k, want) {
			t.Errorf("krb5.conf lacks %q:\n%s", want, k)
		}
	}
	if strings.Contains(k, "[realms]") {
		t.Error("krb5.conf names a KDC without a domain controller")
	}
	p.DomainController = "dc1.corp.example.com"
	if k := string(Krb5Conf(p)); !strings.Contains(k, "kdc = dc1.corp.example.com") || !strings.Contains(k, "dns_lookup_kdc = false") {
		t.Errorf("krb5.conf with a DC:\n%s", k)
	}
	s := string(SSSDConf(p))
	for _, want := range []string{"[domain/corp.example.com]", "id_provider = ad", "krb5_realm = CORP.EXAMPLE.COM", "krb5_keytab = /etc/krb5.keytab", "ad_server = dc1.corp.example.com"} {
		if !strings.Contains(s, want) {
			t.Errorf("sssd.conf lacks %q:\n%s", want, s)
		}
	}
}

func TestAdcliHint(t *testing.T) {
	for out, want := range map[string]string{
		"adcli: couldn't connect to corp domain: Couldn't authenticate as: a@CORP: Preauthentication failed": "credentials",
		"adcli: couldn't connect to corp.example.com domain: Couldn't lookup domain controller SRV records":  "domainController",
		"adcli: joining domain failed: Insufficient permissions to modify computer account":                  "organizationalUnit",
		"something new": "Check spec.host.domainJoin",
	} {
		if got := AdcliHint(out); !strings.Contains(got, want) {
			t.Errorf("AdcliHint(%q) = %q, want it to mention %q", out, got, want)
		}
	}
}

func TestDecodeBlob(t *testing.T) {
	bin := []byte{0x01, 0x00, 0xfe, 0x42, 0x99, 0x10, 0x00, 0x07}
	text := base64.StdEncoding.EncodeToString(bin)
	utf16le := func(s string, bom bool) []byte {
		var b []byte
		if bom {
			b = append(b, 0xff, 0xfe)
		}
		for _, u := range utf16.Encode([]rune(s + "\x00")) {
			b = append(b, byte(u), byte(u>>8))
		}
		return b
	}
	for name, in := range map[string][]byte{
		"utf-8":          []byte(text + "\r\n"),
		"utf-16 bom":     utf16le(text, true),
		"utf-16 no bom":  utf16le(text, false),
		"wrapped utf-8":  []byte(text[:4] + "\n" + text[4:]),
		"utf-8 with bom": append([]byte("\ufeff"), text...),
	} {
		got, err := DecodeBlob(in)
		if err != nil || !bytes.Equal(got, bin) {
			t.Errorf("%s: %x, %v", name, got, err)
		}
	}
	for name, in := range map[string][]byte{"empty": nil, "not base64": []byte("%%%")} {
		if _, err := DecodeBlob(in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestStepWithFakeJoiner covers the step's outcomes: join, unchanged,
// dry run, reboot required, join failure, another domain, a missing
// secret file.
func TestStepWithFakeJoiner(t *testing.T) {
	ctx := context.Background()
	newEnv := func(root string) *host.Env { return &host.Env{Root: root} }

	t.Run("join then unchanged", func(t *testing.T) {
		root := t.TempDir()
		dj := credsJoin()
		dj.Linux.WriteKrb5Conf, dj.Linux.WriteSSSDConf = true, true
		f := &fakeJoiner{outcome: Outcome{Detail: "adcli testjoin: Sucessfully validated join to domain corp.example.com"}}
		s := Step(dj, Options{Joiner: f})
		res, err := s.Apply(ctx, newEnv(root))
		if err != nil || !res.Changed || !strings.Contains(res.Changes[0], "validated join") || len(res.Changes) != 3 {
			t.Fatalf("first run: %+v %v", res, err)
		}
		if len(f.joins) != 1 || f.joins[0].Password != "p4ss-w0rd" {
			t.Fatalf("joins %+v", f.joins)
		}
		if fi, err := os.Stat(filepath.Join(root, SSSDConfPath)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("sssd.conf %v %v", fi, err)
		}
		res, err = Step(dj, Options{Joiner: f}).Apply(ctx, newEnv(root))
		if err != nil || res.Changed || !strings.HasPrefix(res.Changes[0], "already joined to domain corp.example.com; fake: joined") {
			t.Fatalf("second run: %+v %v", res, err)
		}
		if len(f.joins) != 1 {
			t.Error("second run joined again")
		}
	})
	t.Run("dry run", func(t *testing.T) {
		var out bytes.Buffer
		f := &fakeJoiner{}
		env := &host.Env{Root: t.TempDir(), DryRun: true, Out: &out}
		res, err := Step(credsJoin(), Options{Joiner: f}).Apply(ctx, env)
		if err != nil || !res.Changed || len(f.joins) != 0 || !strings.Contains(out.String(), "would join domain corp.example.com (Credentials)") {
			t.Fatalf("dry run: %+v %v %q", res, err, out.String())
		}
	})
	t.Run("reboot required", func(t *testing.T) {
		f := &fakeJoiner{outcome: Outcome{RebootRequired: true}}
		res, err := Step(credsJoin(), Options{Joiner: f}).Apply(ctx, newEnv(t.TempDir()))
		if c, _ := errclass.Of(err); c != errclass.RebootRequired || !errors.Is(err, ErrRebootRequired) || !res.Changed {
			t.Fatalf("reboot: %+v %v", res, err)
		}
		f.membership.RebootPending = true
		_, err = Step(credsJoin(), Options{Joiner: f}).Apply(ctx, newEnv(t.TempDir()))
		if c, _ := errclass.Of(err); c != errclass.RebootRequired || len(f.joins) != 1 {
			t.Fatalf("before the reboot: %v, %d joins", err, len(f.joins))
		}
	})
	t.Run("join fails", func(t *testing.T) {
		f := &fakeJoiner{joinErr: errclass.Errorf(errclass.DomainJoinFailed, "hint", "refused")}
		_, err := Step(credsJoin(), Options{Joiner: f}).Apply(ctx, newEnv(t.TempDir()))
		if c, h := errclass.Of(err); c != errclass.DomainJoinFailed || h != "hint" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("other domain", func(t *testing.T) {
		f := &fakeJoiner{membership: Membership{Joined: true, Names: []string{"OTHER"}}}
		_, err := Step(credsJoin(), Options{Joiner: f}).Apply(ctx, newEnv(t.TempDir()))
		if c, _ := errclass.Of(err); c != errclass.DomainJoinFailed || !errors.Is(err, ErrOtherDomain) || len(f.joins) != 0 {
			t.Fatalf("%v", err)
		}
	})
	t.Run("secret file missing", func(t *testing.T) {
		dj := credsJoin()
		dj.Credentials.Password = machineadm.SecretSource{File: "/etc/machineadm/secrets/ad"}
		err := Step(dj, Options{Joiner: &fakeJoiner{}}).Check(ctx, newEnv(t.TempDir()))
		if c, _ := errclass.Of(err); c != errclass.PayloadUnavailable || !strings.Contains(err.Error(), "spec.host.domainJoin.credentials.password") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("password file of two lines", func(t *testing.T) {
		root := t.TempDir()
		dj := credsJoin()
		dj.Credentials.Password = machineadm.SecretSource{File: "/etc/machineadm/secrets/ad"}
		if err := os.MkdirAll(filepath.Join(root, "etc/machineadm/secrets"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "etc/machineadm/secrets/ad"), []byte("p4ss-w0rd\nsecond-line\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		f := &fakeJoiner{}
		_, err := Step(dj, Options{Joiner: f}).Apply(ctx, newEnv(root))
		if c, _ := errclass.Of(err); c != errclass.PayloadUnavailable || !strings.Contains(err.Error(), "spec.host.domainJoin.credentials.password") || len(f.joins) != 0 {
			t.Fatalf("%v, %d joins", err, len(f.joins))
		}
		if strings.Contains(err.Error(), "second-line") || strings.Contains(err.Error(), "p4ss") {
			t.Fatalf("the error quotes the password: %v", err)
		}
	})
	// A password file is read as the user wrote it: a CRLF line end is
	// dropped, a no-break space kept (the run trimmed it, joining with
	// another password), a Notepad byte-order mark, a line separator or
	// UTF-16 text refused, never quoted.
	for _, tc := range []struct {
		name, content, want string
	}{
		{"CRLF", "p4ss-w0rd\r\n", "p4ss-w0rd"},
		{"trailing no-break space", "p4ss-w0rd\u00a0\n", "p4ss-w0rd\u00a0"},
		{"byte-order mark", "\ufeffp4ss-w0rd\r\n", ""},
		{"line separator", "p4ss-w0rd\u2028second-line", ""},
		{"UTF-16", "\xff\xfep\x004\x00s\x00s\x00\r\x00\n\x00", ""},
	} {
		t.Run("password file "+tc.name, func(t *testing.T) {
			root := t.TempDir()
			dj := credsJoin()
			dj.Credentials.Password = machineadm.SecretSource{File: "/etc/machineadm/secrets/ad"}
			if err := os.MkdirAll(filepath.Join(root, "etc/machineadm/secrets"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "etc/machineadm/secrets/ad"), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			f := &fakeJoiner{}
			_, err := Step(dj, Options{Joiner: f}).Apply(ctx, newEnv(root))
			if tc.want != "" {
				if err != nil || len(f.joins) != 1 || f.joins[0].Password != tc.want {
					t.Fatalf("%v, joins %q", err, f.joins)
				}
				return
			}
			if c, _ := errclass.Of(err); c != errclass.PayloadUnavailable || !strings.Contains(err.Error(), "spec.host.domainJoin.credentials.password") || len(f.joins) != 0 {
				t.Fatalf("%v, %d joins", err, len(f.joins))
			}
			if strings.Contains(err.Error(), "second-line") || strings.Contains(err.Error(), "p4ss") {
				t.Fatalf("the error quotes the password: %v", err)
			}
		})
	}
	t.Run("no domain join", func(t *testing.T) {
		res, err := Step(nil, Options{}).Apply(ctx, newEnv(t.TempDir()))
		if err != nil || res.Changed {
			t.Fatalf("%+v %v", res, err)
		}
	})
}

// TestNetJoinerWithFakeNetAPI drives the Windows joiner's logic over a
// fake netapi32: join, reboot pending until Windows boots again, then
// unchanged; offline blob; a refused password.
func TestNetJoinerWithFakeNetAPI(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	api := &fakeNetAPI{name: "WORKGROUP", status: 2, boot: t0}
	now := t0.Add(3 * time.Minute)
	w := &NetJoiner{API: api, StateDir: t.TempDir(), Now: func() time.Time { return now }}
	dj := credsJoin()
	dj.Linux = nil
	step := func() (host.Result, error) {
		return Step(dj, Options{Joiner: w}).Apply(ctx, &host.Env{Root: t.TempDir()})
	}
	res, err := step()
	if c, _ := errclass.Of(err); c != errclass.RebootRequired || !res.Changed {
		t.Fatalf("join: %+v %v", res, err)
	}
	if want := []string{`NetJoinDomain corp.example.com OU=K8s,DC=corp,DC=example,DC=com corp.example.com\joiner`}; !slices.Equal(api.calls, want) || api.password != "p4ss-w0rd" {
		t.Fatalf("calls %q", api.calls)
	}
	// Rerun before the reboot: still RebootRequired, no second join.
	now = now.Add(time.Minute)
	if _, err := step(); !errors.Is(err, ErrRebootRequired) || len(api.calls) != 1 {
		t.Fatalf("before reboot: %v, calls %q", err, api.calls)
	}
	// Windows reboots: joined, unchanged.
	api.boot = now.Add(time.Minute)
	res, err = step()
	if err != nil || res.Changed || len(api.calls) != 1 || !strings.Contains(res.Changes[0], "member of CORP") {
		t.Fatalf("after reboot: %+v %v", res, err)
	}

	// Offline join with a UTF-16 blob.
	api2 := &fakeNetAPI{name: "WORKGROUP", status: 2, boot: t0}
	w2 := &NetJoiner{API: api2, StateDir: t.TempDir(), Now: func() time.Time { return now }}
	blob := []byte{9, 8, 7, 6}
	dj2 := &machineadm.DomainJoin{Domain: "corp.example.com", OfflineJoinBlob: &machineadm.SecretSource{Value: base64.StdEncoding.EncodeToString(blob)}}
	_, err = Step(dj2, Options{Joiner: w2}).Apply(ctx, &host.Env{Root: t.TempDir()})
	if !errors.Is(err, ErrRebootRequired) || !bytes.Equal(api2.blob, blob) {
		t.Fatalf("offline: %v, blob %x", err, api2.blob)
	}

	// A refused password: DomainJoinFailed with the credentials hint.
	api3 := &fakeNetAPI{name: "WORKGROUP", status: 2, boot: t0, joinErr: netapi.ErrorLogonFailure}
	w3 := &NetJoiner{API: api3, StateDir: t.TempDir()}
	_, err = Step(credsJoin(), Options{Joiner: w3}).Apply(ctx, &host.Env{Root: t.TempDir()})
	if c, h := errclass.Of(err); c != errclass.DomainJoinFailed || !strings.Contains(h, "credentials") {
		t.Fatalf("logon failure: %v (%s)", err, h)
	}
}

func TestRebootPending(t *testing.T) {
	joined := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	if !RebootPending(joined, joined.Add(-time.Hour)) {
		t.Error("booted before the join: pending")
	}
	if RebootPending(joined, joined.Add(time.Second)) {
		t.Error("booted after the join: not pending")
	}
}
