//go:build !linux && !windows

package domainjoin

import (
	"context"
	"errors"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// DefaultStateDir keeps machineadm's state.
const DefaultStateDir = "/var/lib/machineadm"

// DefaultJoiner on an operating system without a domain-join applier
// refuses to join.
func DefaultJoiner(root, stateDir string) Joiner { return unsupported{} }

type unsupported struct{}

var errUnsupported = errors.New("domain join is implemented for Linux (adcli) and Windows only")

func (unsupported) Membership(context.Context, *Plan) (Membership, error) { return Membership{}, nil }
func (unsupported) Join(context.Context, *Plan, Secret) (Outcome, error) {
	return Outcome{}, errclass.New(errclass.DomainJoinFailed, "", errUnsupported)
}
