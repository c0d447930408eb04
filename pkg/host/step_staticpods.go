package host

import (
	"context"
	"fmt"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/host/staticpod"
)

func init() {
	Register(Concern{Order: 90, Name: StepStaticPods, Short: "Write extra static pod manifests to the kubelet's manifest directory", Class: errclass.HostPreparationFailed, AfterKubeadm: true,
		OS: []string{OSLinux}, Fields: []string{"spec.host.staticPods"}, Validation: "validateHost",
		checker: func(cfg *machineadm.MachineBootstrapConfig) checker {
			return staticPodsChecker(cfg.Spec.Host.StaticPods, &cfg.Spec.Node.Kubelet)
		}})
}

type staticPodsPlan struct{ manifests []staticpod.Manifest }

func staticPodsChecker(pods []machineadm.StaticPod, kubelet *machineadm.Kubelet) checker {
	return func(ctx context.Context, env *Env) (plan, error) {
		m, err := staticpod.Manifests(pods, staticpod.Dir(kubelet))
		if err != nil {
			return nil, hostErr(hintStaticPods, "%w", err)
		}
		return &staticPodsPlan{manifests: m}, nil
	}
}

func (p *staticPodsPlan) apply(ctx context.Context, env *Env, rec *recorder) error {
	for i, m := range p.manifests {
		d := files.Desired{Path: m.Path, Content: m.Content, Mode: staticpod.Mode, Secret: true}
		if _, err := rec.file(d, fmt.Sprintf("spec.host.staticPods[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}
