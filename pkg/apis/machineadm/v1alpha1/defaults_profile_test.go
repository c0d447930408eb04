package v1alpha1

import (
	"reflect"
	"slices"
	"testing"
)

func argValue(args []Arg, name string) (string, bool) {
	i := slices.IndexFunc(args, func(a Arg) bool { return a.Name == name })
	if i < 0 {
		return "", false
	}
	return args[i].Value, true
}

func TestSecurityDefaults(t *testing.T) {
	c := &MachineBootstrapConfig{Spec: MachineBootstrapSpec{
		OS: OSLinux, Role: RoleControlPlane, Action: ActionInit,
		Kubernetes:   Kubernetes{Version: "v1.37.2"},
		ControlPlane: &ControlPlane{APIServer: APIServer{Component: Component{ExtraArgs: []Arg{{Name: "profiling", Value: "true"}}}}},
		Node:         Node{Kubelet: Kubelet{Config: map[string]any{"podPidsLimit": 100}}},
		Security:     &Security{Profile: "cis-1.12"},
	}}
	SetDefaults(c)
	cp := c.Spec.ControlPlane
	// The spec's own value wins over the profile's.
	if v, _ := argValue(cp.APIServer.ExtraArgs, "profiling"); v != "true" {
		t.Errorf("apiServer profiling = %q, want the spec's true", v)
	}
	if v, _ := argValue(cp.APIServer.ExtraArgs, "kubelet-certificate-authority"); v != "/etc/kubernetes/pki/ca.crt" {
		t.Errorf("kubelet-certificate-authority = %q", v)
	}
	for _, args := range [][]Arg{cp.ControllerManager.ExtraArgs, cp.Scheduler.ExtraArgs} {
		if v, _ := argValue(args, "profiling"); v != "false" {
			t.Errorf("profiling = %q in %v", v, args)
		}
		if v, _ := argValue(args, "tls-min-version"); v != "VersionTLS12" {
			t.Errorf("tls-min-version = %q in %v", v, args)
		}
	}
	kc := c.Spec.Node.Kubelet.Config
	if kc["serverTLSBootstrap"] != true || kc["podPidsLimit"] != 100 {
		t.Errorf("kubelet config %v: want serverTLSBootstrap true and the spec's podPidsLimit 100", kc)
	}
	if _, ok := kc["protectKernelDefaults"]; ok {
		t.Errorf("cis-1.12 set protectKernelDefaults: %v", kc)
	}
	// Defaulting twice changes nothing (no duplicate flags).
	before := len(cp.APIServer.ExtraArgs)
	SetDefaults(c)
	if len(cp.APIServer.ExtraArgs) != before {
		t.Errorf("second SetDefaults added flags: %v", cp.APIServer.ExtraArgs)
	}
}

func TestSecurityDefaultsSTIGWorker(t *testing.T) {
	c := &MachineBootstrapConfig{Spec: MachineBootstrapSpec{
		OS: OSLinux, Role: RoleWorker, Action: ActionJoin,
		Kubernetes: Kubernetes{Version: "v1.37.2"},
		Host:       Host{Sysctl: map[string]string{"kernel.panic": "10", "net.ipv4.ip_forward": "1"}},
		Security:   &Security{Profile: "stig"},
	}}
	SetDefaults(c)
	kc := c.Spec.Node.Kubelet.Config
	if kc["protectKernelDefaults"] != true || kc["staticPodPath"] != "" {
		t.Errorf("stig worker kubelet config %v", kc)
	}
	want := map[string]string{
		"vm.overcommit_memory": "1", "vm.panic_on_oom": "0", "kernel.panic": "10", "kernel.panic_on_oops": "1",
		"kernel.keys.root_maxkeys": "1000000", "kernel.keys.root_maxbytes": "25000000", "net.ipv4.ip_forward": "1",
	}
	if !reflect.DeepEqual(c.Spec.Host.Sysctl, want) {
		t.Errorf("sysctl %v, want %v", c.Spec.Host.Sysctl, want)
	}
	if c.Spec.ControlPlane != nil {
		t.Errorf("a worker got a controlPlane section")
	}
}

// No profile: defaults are as before.
func TestNoProfileNoHardening(t *testing.T) {
	c := &MachineBootstrapConfig{Spec: MachineBootstrapSpec{OS: OSLinux, Role: RoleWorker, Kubernetes: Kubernetes{Version: "v1.37.2"}}}
	SetDefaults(c)
	if c.Spec.Node.Kubelet.Config != nil || c.Spec.Host.Sysctl != nil {
		t.Errorf("hardening without a profile: %v %v", c.Spec.Node.Kubelet.Config, c.Spec.Host.Sysctl)
	}
}
