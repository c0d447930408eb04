package host

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/files"
)

// StepAccounts is the name of the step that creates the control-plane
// accounts.
const StepAccounts = "accounts"

// accountsShort is the phase's one-line description.
const accountsShort = "Create the system accounts of the Systemd control plane (kubeadm-kas, …) before any file that they own is written"

func init() {
	// Order 5: before files (10) and every other step that writes a file
	// owned by a control-plane account.
	Register(Concern{Order: 5, Name: StepAccounts, Short: accountsShort, Class: errclass.HostPreparationFailed,
		OS: []string{OSLinux},
		Step: func(cfg *machineadm.MachineBootstrapConfig) (Step, bool) {
			accounts := cpunits.AccountsFor(cfg)
			return accountsStep(accounts), len(accounts) > 0
		}})
}

// accountsStep creates accounts with systemd-sysusers (cpunits.CreateUsers:
// idempotent; the sysusers.d file also recreates them at boot). Its check
// changes nothing.
func accountsStep(accounts []cpunits.Account) Step {
	return Step{
		Name:  StepAccounts,
		Short: accountsShort,
		Check: func(ctx context.Context, env *Env) error { return nil },
		Apply: func(ctx context.Context, env *Env) (Result, error) {
			line, err := cpunits.CreateUsers(ctx, env.root(), accounts, nil, env.DryRun)
			if errors.Is(err, cpunits.ErrAccountTaken) {
				return Result{}, hostErr("the control plane runs as system accounts of these names; rename or remove the login user or shared group of that name, then run again", "creating the control-plane accounts: %w", err)
			}
			if err != nil {
				return Result{}, hostErr("systemd-sysusers must be installed (package systemd) and /etc/passwd writable", "creating the control-plane accounts: %w", err)
			}
			if env.DryRun {
				fmt.Fprintln(env.out(), "would create accounts "+accountNames(accounts))
				return Result{Changed: true, Changes: []string{wouldLine(line)}}, nil
			}
			return Result{Changed: !strings.HasSuffix(line, " unchanged"), Changes: []string{line}}, nil
		},
	}
}

func accountNames(accounts []cpunits.Account) string {
	var n []string
	for _, a := range accounts {
		n = append(n, a.Name)
	}
	return strings.Join(n, ", ")
}

// pendingAccounts are the user and group names the accounts step of this
// run creates for cfg: an owner named so is resolved when its file is
// written (after that step), not in host-check.
func pendingAccounts(cfg *machineadm.MachineBootstrapConfig) map[string]bool {
	out := map[string]bool{}
	for _, a := range cpunits.AccountsFor(cfg) {
		out[a.Name] = true
	}
	return out
}

// owner is a file's owner and group: numeric ids, or names of accounts
// that an earlier step creates (pending), resolved when the file is
// written.
type owner struct {
	uid, gid    int
	user, group string // pending names; "" when resolved
	userField   string
	groupField  string
}

// resolveOwner resolves user and group (names or numeric ids) in ids; a
// name unknown there but in pending is kept for later (resolve). Errors
// name userField or groupField.
func resolveOwner(ids *files.IDs, user, group string, pending map[string]bool, userField, groupField string) (owner, error) {
	o := owner{userField: userField, groupField: groupField}
	var err error
	if o.uid, err = ids.UID(user); err != nil {
		if !pending[user] {
			return o, hostErr(hintFileOwner, "%s: %w", userField, err)
		}
		o.user = user
	}
	if o.gid, err = ids.GID(group); err != nil {
		if !pending[group] {
			return o, hostErr(hintFileOwner, "%s: %w", groupField, err)
		}
		o.group = group
	}
	return o, nil
}

// resolve fills the pending names' ids from the root's databases as they
// are now (after the accounts step). In a dry run nothing was created:
// pending names stay 0 and a note says so.
func (o owner) resolve(env *Env, rec *recorder, path string) (uid, gid int, err error) {
	if o.user == "" && o.group == "" {
		return o.uid, o.gid, nil
	}
	ids, err := files.LoadIDs(env.root())
	if err != nil {
		return 0, 0, hostErr(hintFileOwner, "%s: %w", o.userField, err)
	}
	uid, gid = o.uid, o.gid
	if o.user != "" {
		if uid, err = ids.UID(o.user); err != nil {
			if !env.DryRun {
				return 0, 0, hostErr(hintFileOwner, "%s: %w (the accounts step should have created it)", o.userField, err)
			}
			rec.note(fmt.Sprintf("%s will be owned by %s, which the accounts step creates", path, o.user))
			uid = 0
		}
	}
	if o.group != "" {
		if gid, err = ids.GID(o.group); err != nil {
			if !env.DryRun {
				return 0, 0, hostErr(hintFileOwner, "%s: %w (the accounts step should have created it)", o.groupField, err)
			}
			gid = 0
		}
	}
	return uid, gid, nil
}
