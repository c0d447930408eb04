//go:build !windows

package windows

import (
	"context"
	"errors"
)

var errNotWindows = errors.New("Windows host steps run on Windows only")

type notWindows struct{}

func (notWindows) Run(context.Context, string, ...string) ([]byte, error) { return nil, errNotWindows }
func (notWindows) Query(string) (ServiceState, bool, error) {
	return ServiceState{}, false, errNotWindows
}
func (notWindows) Create(ServiceDefinition) error { return errNotWindows }
func (notWindows) Update(ServiceDefinition) error { return errNotWindows }
func (notWindows) Restart(string) error           { return errNotWindows }

func defaultRunner() Runner           { return notWindows{} }
func defaultServices() ServiceManager { return notWindows{} }
