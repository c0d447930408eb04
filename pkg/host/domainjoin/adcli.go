package domainjoin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// DefaultAdcliTimeout bounds one adcli command.
const DefaultAdcliTimeout = 2 * time.Minute

// Adcli is the Linux Joiner: Debian's adcli (package adcli), which joins
// with Kerberos and LDAP and writes the host keytab. The password reaches
// adcli on its standard input (--stdin-password), never its command line
// or environment.
type Adcli struct {
	// Path is the adcli binary. Default: "adcli" from PATH.
	Path string
	// Root is the host's root directory; the keytab is written below it.
	// Default "/".
	Root string
	// Timeout bounds each adcli command. Default DefaultAdcliTimeout.
	Timeout time.Duration
	// Env is the environment of adcli, for example KRB5_CONFIG in
	// tests. Default: this process's environment with LANG=C.
	Env []string
}

// JoinArgs are the arguments of `adcli join` for plan p, writing the
// keytab at keytab (a host path). They never hold the password.
func JoinArgs(p *Plan, keytab string) []string {
	args := []string{"join", "--domain=" + p.Domain, "--domain-realm=" + p.Realm,
		"--login-user=" + adcliUser(p.Username), "--stdin-password", "--host-keytab=" + keytab, "--show-details"}
	if p.DomainController != "" {
		args = append(args, "--domain-controller="+p.DomainController)
	}
	if p.OU != "" {
		args = append(args, "--domain-ou="+p.OU)
	}
	return args
}

// TestJoinArgs are the arguments of `adcli testjoin`, which checks the
// keytab's machine account against a domain controller.
func TestJoinArgs(p *Plan, keytab string) []string {
	args := []string{"testjoin", "--domain=" + p.Domain, "--host-keytab=" + keytab}
	if p.DomainController != "" {
		args = append(args, "--domain-controller="+p.DomainController)
	}
	return args
}

// adcliUser strips a "DOMAIN\" prefix: adcli takes "user" or
// "user@REALM".
func adcliUser(u string) string {
	if _, after, ok := strings.Cut(u, `\`); ok {
		return after
	}
	return u
}

func (a *Adcli) keytab(p *Plan) string {
	root := a.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, p.Keytab)
}

// Membership runs `adcli testjoin` when the keytab exists: success means
// joined (Names holds the domain, Detail adcli's message). A missing
// keytab, or a keytab the domain does not accept, means not joined.
func (a *Adcli) Membership(ctx context.Context, p *Plan) (Membership, error) {
	kt := a.keytab(p)
	if _, err := os.Stat(kt); errors.Is(err, os.ErrNotExist) {
		return Membership{Detail: "no host keytab at " + p.Keytab}, nil
	}
	out, err := a.run(ctx, nil, TestJoinArgs(p, kt)...)
	if err != nil {
		return Membership{Detail: "adcli testjoin: " + lastLine(out)}, nil
	}
	return Membership{Joined: true, Names: []string{p.Domain}, Detail: "adcli testjoin: " + lastLine(out)}, nil
}

// Join runs `adcli join` with the password on standard input, makes the
// keytab 0600 and confirms with `adcli testjoin`, whose message is
// Outcome.Detail. Failures carry class DomainJoinFailed with a hint
// chosen from adcli's message.
func (a *Adcli) Join(ctx context.Context, p *Plan, s Secret) (Outcome, error) {
	if p.Method != MethodCredentials {
		return Outcome{}, errclass.Errorf(errclass.DomainJoinFailed, "a Linux host joins with spec.host.domainJoin.credentials", "offline-join blobs are Windows-only")
	}
	kt := a.keytab(p)
	if err := os.MkdirAll(filepath.Dir(kt), 0o755); err != nil {
		return Outcome{}, errclass.Errorf(errclass.HostPreparationFailed, "check that the keytab's directory is writable", "keytab directory: %w", err)
	}
	out, err := a.run(ctx, []byte(s.Password), JoinArgs(p, kt)...)
	if err != nil {
		return Outcome{}, errclass.Errorf(errclass.DomainJoinFailed, AdcliHint(out), "adcli join %s: %w: %s", p.Domain, err, oneLine(out))
	}
	if err := os.Chmod(kt, 0o600); err != nil {
		return Outcome{}, errclass.Errorf(errclass.HostPreparationFailed, "check the keytab's file system", "keytab %s: %w", p.Keytab, err)
	}
	tout, err := a.run(ctx, nil, TestJoinArgs(p, kt)...)
	if err != nil {
		return Outcome{}, errclass.Errorf(errclass.DomainJoinFailed, AdcliHint(tout), "adcli testjoin after the join: %w: %s", err, oneLine(tout))
	}
	return Outcome{Detail: "adcli testjoin: " + lastLine(tout)}, nil
}

// run runs adcli with args, stdin as its standard input (nil: none), and
// returns its combined output.
func (a *Adcli) run(ctx context.Context, stdin []byte, args ...string) (string, error) {
	path := a.Path
	if path == "" {
		path = "adcli"
	}
	timeout := a.Timeout
	if timeout == 0 {
		timeout = DefaultAdcliTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = a.Env
	if cmd.Env == nil {
		cmd.Env = append(os.Environ(), "LANG=C", "LC_ALL=C")
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w after %s", ctx.Err(), timeout)
	}
	return strings.TrimSpace(out.String()), err
}

// AdcliHint chooses the hint of a failed adcli command from its output.
func AdcliHint(out string) string {
	o := strings.ToLower(out)
	switch {
	case strings.Contains(o, "preauthentication failed"), strings.Contains(o, "password incorrect"),
		strings.Contains(o, "invalid credentials"), strings.Contains(o, "client not found"):
		return "the domain refused the account: check spec.host.domainJoin.credentials (user name and the password file's content)"
	case strings.Contains(o, "couldn't lookup domain"), strings.Contains(o, "cannot find kdc"),
		strings.Contains(o, "couldn't connect"), strings.Contains(o, "no such domain"), strings.Contains(o, "cannot contact"):
		return "no domain controller answered: check that the domain's SRV records resolve from this machine or set spec.host.domainJoin.domainController, and that LDAP (389) and Kerberos (88) reach it"
	case strings.Contains(o, "insufficient"), strings.Contains(o, "access denied"), strings.Contains(o, "permission"):
		return "the account may not create computer accounts here: delegate the right on spec.host.domainJoin.organizationalUnit"
	case strings.Contains(o, "no such object"), strings.Contains(o, "ou="):
		return "check spec.host.domainJoin.organizationalUnit: the OU must exist"
	}
	return errclass.DefaultHint(errclass.DomainJoinFailed)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
