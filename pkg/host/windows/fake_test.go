package windows

import (
	"context"
	"errors"
	"strings"
)

// fakeRunner answers dism and netsh like a Windows host would.
type fakeRunner struct {
	containers string          // DISM state of the Containers feature
	rules      map[string]bool // firewall rules present, by name
	calls      []string
}

var errExit1 = errors.New("exit status 1")

func (f *fakeRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	switch name {
	case "dism.exe":
		return []byte("Deployment Image Servicing and Management tool\nVersion: 10.0.20348.1\n\nFeature Name : Containers\nDisplay Name : Containers\nRestart Required : Possible\nState : " + f.containers + "\n\nThe operation completed successfully.\n"), nil
	case "netsh.exe":
		n := strings.TrimPrefix(args[4], "name=")
		if args[2] == "show" {
			if f.rules[n] {
				return []byte("Rule Name: " + n), nil
			}
			return []byte("No rules match the specified criteria."), errExit1
		}
		f.rules[n] = true
		return []byte("Ok."), nil
	}
	return nil, errors.New("unknown tool " + name)
}

// fakeServices is a service control manager in memory.
type fakeServices struct {
	services map[string]ServiceState
	restarts []string
	fail     error
}

func (f *fakeServices) Query(name string) (ServiceState, bool, error) {
	s, ok := f.services[name]
	return s, ok, nil
}

func (f *fakeServices) Create(d ServiceDefinition) error {
	if f.fail != nil {
		return f.fail
	}
	f.services[d.Name] = ServiceState{CommandLine: d.CommandLine(), AutoStart: d.AutoStart, Dependencies: d.Dependencies}
	return nil
}

func (f *fakeServices) Update(d ServiceDefinition) error { return f.Create(d) }

func (f *fakeServices) Restart(name string) error {
	f.restarts = append(f.restarts, name)
	return f.fail
}
