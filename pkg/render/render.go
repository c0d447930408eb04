package render

import (
	"errors"
	"fmt"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Render builds bootstrap data in o.Format that installs the machineadm
// agent and runs `machineadm bootstrap` with spec.
//
// spec is the machine spec document exactly as it is to reach the machine
// (it is delivered byte for byte); cfg is its loaded form (spec.Load), used
// to look for inline secrets. Unless o.Payload is set, spec travels inside
// the bootstrap data.
//
// Errors: *OptionError for invalid options, *InlineSecretsError when cfg
// carries inline secrets that would land in user data and
// o.AllowInlineSecrets is false, *SizeError when the output is larger than
// o.MaxSize.
func Render(spec []byte, cfg *machineadm.MachineBootstrapConfig, o Options) ([]byte, error) {
	if cfg == nil {
		return nil, errors.New("render: the loaded spec is required")
	}
	r, err := resolve(o)
	if err != nil {
		return nil, err
	}
	if cfg.Spec.OS == machineadm.OSWindows {
		// Where the agent writes it (a Linux spec's path means nothing to
		// the Windows stub, and its agent refuses the spec there).
		r.reportPath = cfg.Spec.Report.Path
	}
	if r.Payload == nil && !o.AllowInlineSecrets {
		if fields := InlineSecrets(cfg); len(fields) > 0 {
			return nil, &InlineSecretsError{Fields: fields}
		}
	}
	info, ok := LookupFormat(r.Format)
	if !ok {
		return nil, fmt.Errorf("render: format %q has no renderer", r.Format)
	}
	out, err := info.render(r, spec)
	if err != nil {
		return nil, err
	}
	if err := checkSize(r.Format, out, o.MaxSize); err != nil {
		return nil, err
	}
	return out, nil
}
