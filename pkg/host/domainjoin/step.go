package domainjoin

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/redact"
)

// Options configure the step.
type Options struct {
	// Joiner joins the domain. Default: the operating system's
	// (DefaultJoiner(env.Root, StateDir)).
	Joiner Joiner
	// StateDir keeps the Windows join's reboot bookkeeping. Default
	// DefaultStateDir.
	StateDir string
}

// Step returns the "domain-join" host step for a validated, defaulted
// spec.host.domainJoin (nil: a step that does nothing). Check reads the
// secret (class PayloadUnavailable when unreadable); Apply:
//   - already joined: Unchanged (Changed false), Changes[0] is the
//     membership check's words (adcli testjoin's result on Linux);
//   - joined before a reboot that has not happened yet (Windows): an error
//     wrapping ErrRebootRequired, class RebootRequired;
//   - not joined: joins; on Linux writes the keytab (0600) and, when
//     asked, krb5.conf and sssd.conf (0600), and Changes[0] carries adcli
//     testjoin's result; on Windows returns Changed true with an error
//     wrapping ErrRebootRequired (class RebootRequired);
//   - joined to another domain: DomainJoinFailed.
//
// A dry run reports what it would do and calls no Join.
func Step(dj *machineadm.DomainJoin, opts Options) host.Step {
	var mu sync.Mutex
	secrets := map[*host.Env]Secret{}
	check := func(ctx context.Context, env *host.Env) error {
		if dj == nil {
			return nil
		}
		s, err := readSecret(env, dj)
		if err != nil {
			return err
		}
		mu.Lock()
		secrets[env] = s
		mu.Unlock()
		return nil
	}
	apply := func(ctx context.Context, env *host.Env) (host.Result, error) {
		if dj == nil {
			return host.Result{}, nil
		}
		mu.Lock()
		s, ok := secrets[env]
		mu.Unlock()
		if !ok {
			if err := check(ctx, env); err != nil {
				return host.Result{}, err
			}
			mu.Lock()
			s = secrets[env]
			mu.Unlock()
		}
		j := opts.Joiner
		if j == nil {
			j = DefaultJoiner(root(env), opts.StateDir)
		}
		return run(ctx, env, NewPlan(dj), j, s)
	}
	return host.Step{
		Name:  StepName,
		Short: stepShort,
		Check: check,
		Apply: apply,
	}
}

func run(ctx context.Context, env *host.Env, p *Plan, j Joiner, s Secret) (host.Result, error) {
	log := logger(env).With("step", StepName, "domain", p.Domain, "method", string(p.Method))
	start := time.Now()
	log.Info("host step start", "dryRun", env.DryRun)
	var res host.Result
	m, err := j.Membership(ctx, p)
	if err != nil {
		return res, errclass.New(errclass.DomainJoinFailed, "", fmt.Errorf("reading the domain membership: %w", err))
	}
	action, err := Decide(p, m)
	if err != nil {
		return res, errclass.New(errclass.DomainJoinFailed, "machineadm never leaves a domain: remove the machine from its domain, or fix spec.host.domainJoin.domain", err)
	}
	log.Info("domain membership", "joined", m.Joined, "action", action.String(), "detail", m.Detail)
	switch action {
	case ActionAwaitReboot:
		res.Changes = []string{"joined domain " + p.Domain + "; waiting for the reboot that completes the join"}
		return res, errclass.New(errclass.RebootRequired, "", ErrRebootRequired)
	case ActionNone:
		res.Changes = []string{"already joined to domain " + p.Domain + detailSuffix(m.Detail)}
	case ActionJoin:
		if env.DryRun {
			line := fmt.Sprintf("would join domain %s (%s)", p.Domain, p.Method)
			fmt.Fprintln(out(env), line)
			res.Changed, res.Changes = true, []string{line}
			break
		}
		o, err := j.Join(ctx, p, s)
		if err != nil {
			log.Error("host step failed", "err", err, "duration", time.Since(start))
			return res, err
		}
		res.Changed = true
		res.Changes = []string{"joined domain " + p.Domain + detailSuffix(o.Detail)}
		if o.RebootRequired {
			log.Info("domain joined; reboot required", "duration", time.Since(start))
			return res, errclass.New(errclass.RebootRequired, "", ErrRebootRequired)
		}
	}
	if err := writeConfs(env, p, &res); err != nil {
		return res, err
	}
	log.Info("host step done", "changed", res.Changed, "duration", time.Since(start))
	return res, nil
}

// writeConfs writes krb5.conf and sssd.conf when the plan asks for them.
func writeConfs(env *host.Env, p *Plan, res *host.Result) error {
	for _, c := range []struct {
		on      bool
		path    string
		content []byte
		mode    fs.FileMode
		field   string
	}{
		{p.Krb5Conf, Krb5ConfPath, Krb5Conf(p), 0o644, "spec.host.domainJoin.linux.writeKrb5Conf"},
		{p.SSSDConf, SSSDConfPath, SSSDConf(p), 0o600, "spec.host.domainJoin.linux.writeSSSDConf"},
	} {
		if !c.on {
			continue
		}
		hp, err := files.Resolve(root(env), c.path)
		if err != nil {
			return errclass.Errorf(errclass.HostPreparationFailed, "", "%s: %s: %w", c.field, c.path, err)
		}
		cur, err := files.ReadState(hp)
		if err != nil {
			return errclass.Errorf(errclass.HostPreparationFailed, "", "%s: reading %s: %w", c.field, c.path, err)
		}
		ch := files.Plan(files.Desired{Path: c.path, Content: c.content, Mode: c.mode}, hp, cur)
		if !ch.Changed() {
			continue
		}
		res.Changed = true
		if env.DryRun {
			fmt.Fprint(out(env), files.Diff(ch))
			res.Changes = append(res.Changes, "would change "+ch.Summary())
			continue
		}
		if err := files.Apply(ch); err != nil {
			return errclass.Errorf(errclass.HostPreparationFailed, "check that /etc is writable", "%s: writing %s: %w", c.field, c.path, err)
		}
		res.Changes = append(res.Changes, ch.Summary())
	}
	return nil
}

// readSecret reads the password or blob below env's root.
func readSecret(env *host.Env, dj *machineadm.DomainJoin) (Secret, error) {
	var src *machineadm.SecretSource
	field := "spec.host.domainJoin.offlineJoinBlob"
	if dj.Credentials != nil {
		src, field = &dj.Credentials.Password, "spec.host.domainJoin.credentials.password"
	} else {
		src = dj.OfflineJoinBlob
	}
	if src == nil {
		return Secret{}, errclass.Errorf(errclass.InvalidSpec, "", "spec.host.domainJoin: credentials or offlineJoinBlob required")
	}
	data := []byte(src.Value)
	if src.File != "" {
		var err error
		data, err = redact.ReadSecretFile(filepath.Join(root(env), src.File))
		if err != nil {
			if env.DryRun {
				logger(env).Warn("dry run: secret file unreadable; the join is planned without it", "field", field, "file", src.File)
				return Secret{}, nil
			}
			return Secret{}, errclass.Errorf(errclass.PayloadUnavailable, "deliver the secret file named by "+field+" before machineadm runs", "%s: reading %s: %w", field, src.File, err)
		}
	}
	if dj.Credentials != nil {
		pw := validation.TrimSecret(machineadm.SecretFormatPassword, string(data))
		if msg := validation.SecretShapeProblem(machineadm.SecretFormatPassword, pw); msg != "" {
			what := "the value"
			if src.File != "" {
				what = "the file"
			}
			return Secret{}, errclass.Errorf(errclass.PayloadUnavailable, "write the password alone, on one line of UTF-8 text, into the file named by "+field, "%s: %s %s", field, what, msg)
		}
		return Secret{Password: pw}, nil
	}
	return Secret{Blob: data}, nil
}

func detailSuffix(d string) string {
	if d == "" {
		return ""
	}
	return "; " + d
}

func root(env *host.Env) string {
	if env.Root == "" {
		return "/"
	}
	return env.Root
}

func logger(env *host.Env) *slog.Logger {
	if env.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return env.Log
}

func out(env *host.Env) io.Writer {
	if env.Out == nil {
		return io.Discard
	}
	return env.Out
}
