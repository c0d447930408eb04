package phases

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/machineadm/machineadm/pkg/host"
)

// HostCheckPhase is the name of the phase that checks every host step's
// inputs before any of them writes.
const HostCheckPhase = "host-check"

// HostPhases wraps the host-preparation steps as phases. The first phase,
// host-check, runs every step's Check (fetch and verify remote files, look
// up sysctl keys and owners, render containerd's files) for the steps that
// are not in skip, so that a bad input anywhere stops the run before
// anything is written. Steps marked AfterKubeadm (static pods: kubeadm's
// preflight wants an empty manifest directory) are returned in after.
func HostPhases(steps []host.Step, env *host.Env, skip []string) (before, after []Phase) {
	var toCheck []host.Step
	for _, s := range steps {
		if !slices.Contains(skip, s.Name) {
			toCheck = append(toCheck, s)
		}
	}
	before = append(before, Phase{
		Name:  HostCheckPhase,
		Short: "Check host-preparation inputs (remote files, owners, sysctl keys); change nothing",
		Run: func(ctx context.Context, d *Data) (bool, string, error) {
			env.DryRun = d.DryRun
			return false, "checked " + strings.Join(host.Names(toCheck), ", "), host.Check(ctx, env, toCheck)
		},
	})
	for _, s := range steps {
		p := Phase{
			Name:  s.Name,
			Short: s.Short,
			Run: func(ctx context.Context, d *Data) (bool, string, error) {
				env.DryRun = d.DryRun
				res, err := s.Apply(ctx, env)
				return res.Changed, summarize(res.Changes), err
			},
		}
		if s.AfterKubeadm {
			after = append(after, p)
		} else {
			before = append(before, p)
		}
	}
	return before, after
}

// summarize turns a step's change lines into one report message.
func summarize(changes []string) string {
	switch len(changes) {
	case 0:
		return ""
	case 1:
		return changes[0]
	}
	return changes[0] + " (+" + strconv.Itoa(len(changes)-1) + " more)"
}
