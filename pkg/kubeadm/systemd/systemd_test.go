package systemd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	controlplanephase "k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	etcdphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/etcd"
	etcdutil "k8s.io/kubernetes/cmd/kubeadm/app/util/etcd"
	staticpodutil "k8s.io/kubernetes/cmd/kubeadm/app/util/staticpod"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/cpunits/cpunitstest"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/kubeadmtest"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
)

// systemdInit is the Systemd example (docs/examples/control-plane-systemd.yaml:
// binaries from the image and from host.files, extraArgs for etcd and the
// API server) plus an extra argument for the scheduler, translated with a
// patches directory that holds a kube-apiserver patch as well as the
// kubelet's.
func systemdInit(t *testing.T) (*machineadm.MachineBootstrapConfig, *translate.Documents, string) {
	t.Helper()
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-systemd.yaml")
	cfg.Spec.ControlPlane.Scheduler.ExtraArgs = []machineadm.Arg{{Name: "v", Value: "2"}}
	patches := t.TempDir()
	if _, err := translate.WriteKubeletPatch(cfg, patches); err != nil {
		t.Fatal(err)
	}
	// A kubeadm patch of the API server's pod: the units must carry it too.
	patch := `[{"op":"add","path":"/spec/containers/0/command/-","value":"--profiling=false"},` +
		`{"op":"add","path":"/spec/containers/0/env","value":[{"name":"GOMEMLIMIT","value":"2GiB"}]}]`
	if err := os.WriteFile(filepath.Join(patches, "kube-apiserver+json.json"), []byte(patch), 0o600); err != nil {
		t.Fatal(err)
	}
	in := kubeadmtest.Inputs(cfg)
	in.PatchesDir = patches
	docs, err := translate.Translate(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, docs, patches
}

// flags splits "--name=value" arguments into a map, failing on repeats.
func flags(t *testing.T, what string, args []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, a := range args {
		name, val, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") {
			t.Errorf("%s: argument %q is not --name=value", what, a)
		}
		if _, dup := m[name]; dup {
			t.Errorf("%s: flag --%s repeated", what, name)
		}
		m[name] = val
	}
	return m
}

// TestSystemdUnitsMatchKubeadmManifests writes the static pod manifests
// with kubeadm's own phase code (CreateInitStaticPodManifestFiles,
// CreateLocalEtcdStaticPodManifestFile) and compares each with the unit
// file rendered for the Systemd runtime, flag by flag, plus the
// environment: the same flags and values, extraArgs and patches included,
// and the binary from spec.controlPlane.binaries.
func TestSystemdUnitsMatchKubeadmManifests(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
	t.Setenv("NO_PROXY", "10.0.0.0/8,.svc")
	cfg, docs, patches := systemdInit(t)
	s, err := NewSystemdControlPlane(cfg, docs)
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := s.EtcdComponent(nil)
	if err != nil {
		t.Fatal(err)
	}
	cps, err := s.ControlPlaneComponents()
	if err != nil {
		t.Fatal(err)
	}
	comps := append([]cpunits.Component{etcd}, cps...)

	// kubeadm writes its manifests from its own load of the documents.
	ic, err := loadInitConfiguration(docs.YAML)
	if err != nil {
		t.Fatal(err)
	}
	manifests := t.TempDir()
	if err := controlplanephase.CreateInitStaticPodManifestFiles(manifests, patches, ic, false); err != nil {
		t.Fatal(err)
	}
	if err := etcdphase.CreateLocalEtcdStaticPodManifestFile(manifests, patches, ic.NodeRegistration.Name, &ic.ClusterConfiguration, &ic.LocalAPIEndpoint, false); err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{"etcd": "/usr/local/bin/etcd", "kube-apiserver": "/opt/kubernetes/bin/kube-apiserver",
		"kube-controller-manager": "/usr/local/bin/kube-controller-manager", "kube-scheduler": "/opt/kubernetes/bin/kube-scheduler"}
	for _, c := range comps {
		t.Run(c.Name, func(t *testing.T) {
			pod, err := staticpodutil.ReadStaticPodFromDisk(filepath.Join(manifests, c.Name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			files, err := cpunits.Render(c)
			if err != nil {
				t.Fatal(err)
			}
			argv, err := cpunitstest.ParseExecStart(string(files[0].Content))
			if err != nil {
				t.Fatal(err)
			}
			// The files the unit gets as credentials are those the pod
			// names (TestSystemdUnitsReadFilesAsCredentials).
			if argv, err = cpunitstest.ResolveCredentials(string(files[0].Content), argv); err != nil {
				t.Fatal(err)
			}
			ctr := pod.Spec.Containers[0]
			if argv[0] != bins[c.Name] || ctr.Command[0] != c.Name {
				t.Errorf("binary %q (pod command %q), want %q", argv[0], ctr.Command[0], bins[c.Name])
			}
			podFlags := flags(t, "manifest", append(ctr.Command[1:], ctr.Args...))
			unitFlags := flags(t, "unit", argv[1:])
			for name, want := range podFlags {
				got, ok := unitFlags[name]
				switch {
				case !ok:
					t.Errorf("--%s=%s of the manifest is missing from the unit", name, want)
				case got != want:
					t.Errorf("--%s: unit %q, manifest %q", name, got, want)
				}
			}
			for name, got := range unitFlags {
				if _, ok := podFlags[name]; !ok {
					t.Errorf("--%s=%s is in the unit only", name, got)
				}
			}
			if len(podFlags) < 5 {
				t.Errorf("only %d flags in kubeadm's manifest: %q", len(podFlags), ctr.Command)
			}
			var podEnv []cpunits.EnvVar
			for _, e := range ctr.Env {
				podEnv = append(podEnv, cpunits.EnvVar{Name: e.Name, Value: e.Value})
			}
			var unitEnv []cpunits.EnvVar
			if len(files) == 2 {
				if unitEnv, err = cpunitstest.ParseEnvFile(string(files[1].Content)); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(unitEnv, podEnv) {
				t.Errorf("environment: unit %q, manifest %q", unitEnv, podEnv)
			}
		})
	}

	// The spec's extraArgs and the patch reached the units.
	want := map[string]string{"etcd": "--quota-backend-bytes=8589934592", "kube-apiserver": "--profiling=false", "kube-scheduler": "--v=2"}
	for _, c := range comps {
		if w, ok := want[c.Name]; ok && !slices.Contains(c.Command, w) {
			t.Errorf("%s lacks %s", c.Name, w)
		}
	}
	if !slices.Contains(cps[0].ReadWritePaths, "/var/log/kubernetes/audit") || !slices.Contains(etcd.ReadWritePaths, "/var/lib/etcd") {
		t.Errorf("writable paths: apiserver %q, etcd %q", cps[0].ReadWritePaths, etcd.ReadWritePaths)
	}
	if !slices.Contains(cps[0].Command, "--etcd-servers=https://127.0.0.1:2379") || cps[0].After[0] != "etcd.service" {
		t.Errorf("apiserver: %q after %q", cps[0].Command, cps[0].After)
	}
}

// Every file under kubeadm's /etc/kubernetes that a unit's flags name
// (keys, certificates, kubeconfigs) reaches the process as a systemd
// credential: the unit loads it (LoadCredential=, read by systemd as
// root) and the flag points into the credentials directory, so the file
// stays root:root 0600 (CIS 1.1.16, 1.1.18, 1.1.19) although the process
// runs as its own account. systemd-analyze verify accepts the lines
// (TestSystemdUnitsVerifyAndScore).
func TestSystemdUnitsReadFilesAsCredentials(t *testing.T) {
	cfg, docs, _ := systemdInit(t)
	s, err := NewSystemdControlPlane(cfg, docs)
	if err != nil {
		t.Fatal(err)
	}
	etcd, _ := s.EtcdComponent(nil)
	cps, _ := s.ControlPlaneComponents()
	for _, c := range append([]cpunits.Component{etcd}, cps...) {
		files, err := cpunits.Render(c)
		if err != nil {
			t.Fatal(err)
		}
		unit := string(files[0].Content)
		argv, err := cpunitstest.ParseExecStart(unit)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range argv[1:] {
			name, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			switch {
			case strings.HasPrefix(v, "/etc/kubernetes/"):
				t.Errorf("%s: --%s names %s: the process opens it itself", c.Name, name, v)
			case strings.HasPrefix(v, cpunitstest.CredentialsDir+"/"):
				n++
				if !strings.Contains(unit, "\nLoadCredential="+name+":/etc/kubernetes/") {
					t.Errorf("%s: --%s has no LoadCredential= line from /etc/kubernetes", c.Name, name)
				}
			}
		}
		// etcd: 6 certificate flags; the API server 13 and more; the
		// controller manager 9; the scheduler its 3 kubeconfigs.
		if min := map[string]int{"etcd": 6, "kube-apiserver": 13, "kube-controller-manager": 9, "kube-scheduler": 3}[c.Name]; n < min {
			t.Errorf("%s: %d credentials, want at least %d:\n%s", c.Name, n, min, unit)
		}
	}
}

// A joining member's etcd unit names the existing members and joins an
// existing cluster, as kubeadm's join writes it.
func TestSystemdEtcdJoinFlags(t *testing.T) {
	cfg, docs, _ := systemdInit(t)
	s, err := NewSystemdControlPlane(cfg, docs)
	if err != nil {
		t.Fatal(err)
	}
	members := []EtcdMember{{Name: "cp0", PeerURL: "https://192.0.2.9:2380"}, {Name: s.NodeName(), PeerURL: "https://192.0.2.10:2380"}}
	c, err := s.EtcdComponent(members)
	if err != nil {
		t.Fatal(err)
	}
	ic, _ := loadInitConfiguration(docs.YAML)
	pod := etcdphase.GetEtcdPodSpec(&ic.ClusterConfiguration, &ic.LocalAPIEndpoint, ic.NodeRegistration.Name,
		[]etcdutil.Member{{Name: "cp0", PeerURL: "https://192.0.2.9:2380"}, {Name: s.NodeName(), PeerURL: "https://192.0.2.10:2380"}})
	if got, want := c.Command[1:], pod.Spec.Containers[0].Command[1:]; !reflect.DeepEqual(got, want) {
		t.Errorf("join etcd command\n%q\nwant\n%q", got, want)
	}
	for _, f := range []string{"--initial-cluster-state=existing", "--initial-cluster=cp0=https://192.0.2.9:2380,cp1=https://192.0.2.10:2380"} {
		if !slices.Contains(c.Command, f) {
			t.Errorf("join etcd lacks %s", f)
		}
	}
}

// Accounts and path rules: etcd's data directory is etcd:etcd (CIS
// 1.1.11, 1.1.12); every key and kubeconfig the units read is root:root
// 0600 (1.1.16, 1.1.18, 1.1.19, 1.1.21), also one an older machineadm
// gave a component's account; the audit log directory belongs to the API
// server, which writes it.
func TestSystemdPathRules(t *testing.T) {
	cfg, docs, _ := systemdInit(t)
	s, err := NewSystemdControlPlane(cfg, docs)
	if err != nil {
		t.Fatal(err)
	}
	cps, _ := s.ControlPlaneComponents()
	etcd, _ := s.EtcdComponent(nil)
	rules := map[string]cpunits.PathRule{}
	for _, r := range append(s.EtcdPathRules(etcd), s.ControlPlanePathRules(cps)...) {
		rules[r.Path] = r
	}
	for p, want := range map[string]string{
		"/var/lib/etcd":                           "0700 etcd",
		"/etc/kubernetes/pki/etcd/server.key":     "0600 0",
		"/etc/kubernetes/pki/etcd/peer.key":       "0600 0",
		"/etc/kubernetes/pki/sa.key":              "0600 0",
		"/etc/kubernetes/pki/sa.pub":              "0600 0",
		"/etc/kubernetes/pki/apiserver.key":       "0600 0",
		"/etc/kubernetes/pki/ca.key":              "0600 0",
		"/etc/kubernetes/controller-manager.conf": "0600 0",
		"/etc/kubernetes/scheduler.conf":          "0600 0",
		"/etc/kubernetes/pki":                     "0755 0",
		"/var/log/kubernetes/audit":               "0700 kubeadm-kas",
	} {
		r, ok := rules[p]
		got := ""
		if ok {
			owner := r.User + ":" + r.Group
			if r.User == r.Group {
				owner = r.User
			}
			got = fmt.Sprintf("%04o %s", r.Mode, owner)
		}
		if got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	if !rules["/var/lib/etcd"].Recursive {
		t.Error("etcd data dir not recursive")
	}
	var names []string
	for _, a := range cpunits.Accounts(s.LocalEtcd()) {
		names = append(names, a.Name)
	}
	for _, r := range rules {
		if r.User != "0" && !r.Dir {
			t.Errorf("%s is given to %s: a unit reads it as a credential", r.Path, r.User)
		}
	}
	if want := []string{"etcd", "kubeadm-kas", "kubeadm-kcm", "kubeadm-ks"}; !reflect.DeepEqual(names, want) {
		t.Errorf("accounts %q, want %q", names, want)
	}
}

// Each derived unit passes systemd-analyze verify, and its exposure level
// (systemd-analyze security --offline=yes) stays below 2.0; go test -v
// logs the four scores.
func TestSystemdUnitsVerifyAndScore(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed")
	}
	cfg, docs, _ := systemdInit(t)
	s, err := NewSystemdControlPlane(cfg, docs)
	if err != nil {
		t.Fatal(err)
	}
	etcd, _ := s.EtcdComponent(nil)
	cps, _ := s.ControlPlaneComponents()
	for _, c := range append([]cpunits.Component{etcd}, cps...) {
		if score := cpunitstest.VerifyForTest(t, c); score > 2.0 {
			t.Errorf("%s: exposure %.1f above 2.0", c.Unit(), score)
		}
	}
}

// The Systemd runtime turns the kubelet's static pod path off through the
// kubelet patch; the StaticPods runtime leaves it alone.
func TestSystemdKubeletPatchTurnsStaticPodsOff(t *testing.T) {
	cfg, _, patches := systemdInit(t)
	if v, ok := translate.KubeletConfig(cfg)["staticPodPath"]; !ok || v != "" {
		t.Errorf("staticPodPath = %v (set %v), want \"\"", v, ok)
	}
	data, err := os.ReadFile(filepath.Join(patches, translate.KubeletPatchFile))
	if err != nil || !strings.Contains(string(data), `"staticPodPath":""`) {
		t.Errorf("kubelet patch %s (%v) lacks staticPodPath", data, err)
	}
	cfg.Spec.ControlPlane.Runtime = machineadm.RuntimeStaticPods
	if _, ok := translate.KubeletConfig(cfg)["staticPodPath"]; ok {
		t.Error("StaticPods runtime sets staticPodPath")
	}
}

// In a dry run the phases print the units they would write and touch
// nothing: no file under the root, no service call.
func TestSystemdPhasesDryRun(t *testing.T) {
	cfg, docs, _ := systemdInit(t)
	root := t.TempDir()
	var out strings.Builder
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: root, DryRun: true, Out: &out}
	ctx := t.Context()
	for name, phase := range map[string]func(context.Context, *SystemdEnv) error{
		"etcd": SystemdEtcdPhase, "wait-control-plane": SystemdWaitControlPlanePhase,
		"control-plane": func(ctx context.Context, env *SystemdEnv) error { return SystemdControlPlanePhase(ctx, env) },
	} {
		if err := phase(ctx, env); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("dry run wrote %v", entries)
	}
	for _, want := range []string{"ExecStart=/usr/local/bin/etcd", "ExecStart=/opt/kubernetes/bin/kube-apiserver", "dry run, not done: would set /var/lib/etcd 0700 etcd:etcd",
		"would wait for the kubelet", "would wait for etcd at http://127.0.0.1:2381/readyz"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, out.String())
		}
	}
	// One component alone, by kubeadm's name; an unknown one is refused.
	out.Reset()
	if err := SystemdControlPlanePhase(ctx, env, "kube-scheduler"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "system/kube-scheduler.service") || strings.Contains(out.String(), "system/kube-apiserver.service") {
		t.Errorf("kube-scheduler alone:\n%s", out.String())
	}
	if err := SystemdControlPlanePhase(ctx, env, "apiserver"); err == nil {
		t.Error("an unknown component was accepted")
	}
	// Without a service manager a real run refuses to start.
	env.DryRun = false
	if err := SystemdControlPlanePhase(ctx, env); err == nil {
		t.Error("a real run without a service manager was accepted")
	}
}

// A dry run's plan names the certificates where a real run sets their
// owners and modes (/etc/kubernetes/pki), not in the dry-run directory the
// dry run's configuration points at.
func TestSystemdDryRunPlanNamesHostCertificates(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-systemd.yaml")
	dry := filepath.Join(t.TempDir(), "pki")
	patches := t.TempDir()
	if _, err := translate.WriteKubeletPatch(cfg, patches); err != nil {
		t.Fatal(err)
	}
	in := kubeadmtest.Inputs(cfg)
	in.PatchesDir = patches
	in.CertificatesDir = dry
	docs, err := translate.Translate(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: t.TempDir(), DryRun: true, Out: io.Discard}
	if err := SystemdControlPlanePhase(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(env.Plan, "\n")
	if strings.Contains(plan, dry) || !strings.Contains(plan, "would set /etc/kubernetes/pki/sa.key ") {
		t.Errorf("plan names the dry-run directory, or not the host's certificates:\n%s", plan)
	}
	if got := hostCertPaths("would set /tmp/x/pki 0755 0:0", "/tmp/x/pki", "/etc/kubernetes/pki"); got != "would set /etc/kubernetes/pki 0755 0:0" {
		t.Errorf("hostCertPaths of the directory itself = %q", got)
	}
	if got := hostCertPaths("would set /tmp/x/pkix/a 0600 0:0", "/tmp/x/pki", "/etc/kubernetes/pki"); got != "would set /tmp/x/pkix/a 0600 0:0" {
		t.Errorf("hostCertPaths of a sibling = %q", got)
	}
}

// A control-plane Join in a dry run: the cluster part comes from kubeadm's
// defaults (there is no cluster to read), this node's part from the join
// configuration; no etcd member is added and nothing is written.
func TestSystemdJoinDryRun(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-join.yaml")
	cp := cfg.Spec.ControlPlane
	cp.Runtime = machineadm.RuntimeSystemd
	cp.Binaries = &machineadm.ControlPlaneBinaries{Etcd: "/usr/local/bin/etcd", KubeAPIServer: "/usr/local/bin/kube-apiserver",
		KubeControllerManager: "/usr/local/bin/kube-controller-manager", KubeScheduler: "/usr/local/bin/kube-scheduler"}
	if cp.Etcd.Local == nil && cp.Etcd.External == nil {
		cp.Etcd.Local = &machineadm.LocalEtcd{DataDir: "/var/lib/etcd"}
	}
	in := kubeadmtest.Inputs(cfg)
	in.PatchesDir = t.TempDir()
	if _, err := translate.WriteKubeletPatch(cfg, in.PatchesDir); err != nil {
		t.Fatal(err)
	}
	docs, err := translate.Translate(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var out strings.Builder
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: root, DryRun: true, Out: &out}
	if err := SystemdControlPlanePhase(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	if err := SystemdEtcdJoinPhase(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("dry run wrote %v", entries)
	}
	adv := "--advertise-address=" + cp.AdvertiseAddress
	for _, want := range []string{"kubeadm's defaults are shown", "would add etcd member https://" + cp.AdvertiseAddress + ":2380", adv, "ExecStart=/usr/local/bin/etcd"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestAccountNamesAreKubeadms: cpunits' account names, which host steps
// use before kubeadm runs, are kubeadm's RootlessControlPlane names, but
// etcd's, which CIS 1.1.12 wants to be "etcd".
func TestAccountNamesAreKubeadms(t *testing.T) {
	if cpunits.EtcdUser != "etcd" || cpunits.EtcdUser == kubeadmconstants.EtcdUserName {
		t.Errorf("etcd's account %q, want etcd (CIS 1.1.12)", cpunits.EtcdUser)
	}
	for _, c := range []struct{ ours, kubeadms string }{
		{cpunits.APIServerUser, kubeadmconstants.KubeAPIServerUserName},
		{cpunits.ControllerManagerUser, kubeadmconstants.KubeControllerManagerUserName},
		{cpunits.SchedulerUser, kubeadmconstants.KubeSchedulerUserName},
	} {
		if c.ours != c.kubeadms {
			t.Errorf("account %q, kubeadm's is %q", c.ours, c.kubeadms)
		}
	}
}

// Every upstream flag that names a file the component only reads, set
// by extraArgs at one of kubeadm's root:root 0600 files (the controller
// manager's per-signer flags at ca.key, which an older layout gave
// kubeadm-kcm), reaches the process as a credential: otherwise the
// process, running as its own account, cannot open the file.
func TestSystemdExtraArgsFileFlagsAreCredentials(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-systemd.yaml")
	cp := cfg.Spec.ControlPlane
	given := map[string]bool{}
	n := 0
	set := func(args *[]machineadm.Arg, file string, names ...string) {
		for _, name := range names {
			given[name] = true
			n++
			*args = append(*args, machineadm.Arg{Name: name, Value: file})
		}
	}
	set(&cp.ControllerManager.ExtraArgs, "/etc/kubernetes/pki/ca.crt",
		"cluster-signing-kubelet-serving-cert-file", "cluster-signing-kubelet-client-cert-file",
		"cluster-signing-kube-apiserver-client-cert-file", "cluster-signing-legacy-unknown-cert-file")
	set(&cp.ControllerManager.ExtraArgs, "/etc/kubernetes/pki/ca.key",
		"cluster-signing-kubelet-serving-key-file", "cluster-signing-kubelet-client-key-file",
		"cluster-signing-kube-apiserver-client-key-file", "cluster-signing-legacy-unknown-key-file")
	set(&cp.ControllerManager.ExtraArgs, "/etc/kubernetes/cloud.conf", "cloud-config")
	set(&cp.APIServer.ExtraArgs, "/etc/kubernetes/tokens.csv", "token-auth-file")
	set(&cp.APIServer.ExtraArgs, "/etc/kubernetes/abac.jsonl", "authorization-policy-file")
	set(&cp.APIServer.ExtraArgs, "/etc/kubernetes/pki/ca.crt", "peer-ca-file")
	// A flag given twice (a service-account key rotation) is two
	// credentials.
	set(&cp.APIServer.ExtraArgs, "/etc/kubernetes/pki/sa.pub", "service-account-key-file")
	set(&cp.APIServer.ExtraArgs, "/etc/kubernetes/pki/sa-old.pub", "service-account-key-file")
	set(&cp.Etcd.Local.ExtraArgs, "/etc/kubernetes/pki/etcd/crl.pem", "client-crl-file")
	set(&cp.Etcd.Local.ExtraArgs, "/etc/kubernetes/pki/etcd/peer-crl.pem", "peer-crl-file")
	in := kubeadmtest.Inputs(cfg)
	in.PatchesDir = t.TempDir()
	docs, err := translate.Translate(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSystemdControlPlane(cfg, docs)
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := s.EtcdComponent(nil)
	if err != nil {
		t.Fatal(err)
	}
	cps, err := s.ControlPlaneComponents()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range append([]cpunits.Component{etcd}, cps...) {
		files, err := cpunits.Render(c)
		if err != nil {
			t.Fatal(err)
		}
		argv, err := cpunitstest.ParseExecStart(string(files[0].Content))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range argv[1:] {
			name, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			switch {
			case strings.HasPrefix(v, "/etc/kubernetes/"):
				t.Errorf("%s: --%s names %s: the process (%s) opens it itself", c.Name, name, v, c.User)
			case strings.HasPrefix(v, cpunitstest.CredentialsDir+"/") && given[name]:
				seen[c.Name+" "+a] = true
			}
		}
	}
	if len(seen) != n {
		t.Errorf("credentials for %d of the %d extraArgs flags: %v", len(seen), n, seen)
	}
}

// The shared credential flags are keyed by kubeadm's component names,
// which credentials looks them up by.
func TestCredentialFlagsUseKubeadmsNames(t *testing.T) {
	for _, name := range []string{kubeadmconstants.Etcd, kubeadmconstants.KubeAPIServer, kubeadmconstants.KubeControllerManager, kubeadmconstants.KubeScheduler} {
		if len(credentialFlags[name]) == 0 {
			t.Errorf("no credential flags for %q", name)
		}
	}
	if len(credentialFlags) != 4 {
		t.Errorf("credential flags for %d components, want 4", len(credentialFlags))
	}
}
