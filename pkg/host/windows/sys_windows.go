package windows

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// execRunner runs Windows tools with os/exec.
type execRunner struct{}

func (execRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// scm is ServiceManager over the service control manager.
type scm struct{}

func defaultRunner() Runner           { return execRunner{} }
func defaultServices() ServiceManager { return scm{} }

// serviceWait bounds waiting for a service to stop or run.
const serviceWait = 2 * time.Minute

func (scm) Query(name string) (ServiceState, bool, error) {
	m, err := mgr.Connect()
	if err != nil {
		return ServiceState{}, false, err
	}
	defer m.Disconnect()
	s, err := m.OpenService(name)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return ServiceState{}, false, nil
	}
	if err != nil {
		return ServiceState{}, false, err
	}
	defer s.Close()
	c, err := s.Config()
	if err != nil {
		return ServiceState{}, true, err
	}
	return ServiceState{CommandLine: c.BinaryPathName, AutoStart: c.StartType == mgr.StartAutomatic, Dependencies: slices.Clone(c.Dependencies)}, true, nil
}

func config(d ServiceDefinition) mgr.Config {
	start := uint32(mgr.StartManual)
	if d.AutoStart {
		start = mgr.StartAutomatic
	}
	return mgr.Config{DisplayName: d.DisplayName, Description: d.Description, StartType: start,
		ErrorControl: mgr.ErrorNormal, Dependencies: d.Dependencies, ServiceType: windows.SERVICE_WIN32_OWN_PROCESS}
}

func (scm) Create(d ServiceDefinition) error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.CreateService(d.Name, d.Executable, config(d), d.Args...)
	if err != nil {
		return err
	}
	defer s.Close()
	// The command line is always d.CommandLine(), the form Query compares
	// with, whatever quoting CreateService chose.
	c := config(d)
	c.BinaryPathName = d.CommandLine()
	if err := s.UpdateConfig(c); err != nil {
		return err
	}
	return recovery(s, d)
}

func (scm) Update(d ServiceDefinition) error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(d.Name)
	if err != nil {
		return err
	}
	defer s.Close()
	c := config(d)
	c.BinaryPathName = d.CommandLine()
	if err := s.UpdateConfig(c); err != nil {
		return err
	}
	return recovery(s, d)
}

func recovery(s *mgr.Service, d ServiceDefinition) error {
	if d.RestartDelay == 0 {
		return nil
	}
	return s.SetRecoveryActions([]mgr.RecoveryAction{{Type: mgr.ServiceRestart, Delay: d.RestartDelay}}, uint32((24 * time.Hour).Seconds()))
}

func (scm) Restart(name string) error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(name)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Query()
	if err != nil {
		return err
	}
	if st.State != svc.Stopped {
		if _, err := s.Control(svc.Stop); err != nil {
			return fmt.Errorf("stopping %s: %w", name, err)
		}
		if err := waitState(s, svc.Stopped); err != nil {
			return err
		}
	}
	if err := s.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	return waitState(s, svc.Running)
}

func waitState(s *mgr.Service, want svc.State) error {
	deadline := time.Now().Add(serviceWait)
	for {
		st, err := s.Query()
		if err != nil {
			return err
		}
		if st.State == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("service %s did not reach state %d within %s (state %d)", s.Name, want, serviceWait, st.State)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
