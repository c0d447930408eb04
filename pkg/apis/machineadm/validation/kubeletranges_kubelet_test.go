package validation

// The kubelet's own validation, run beside machineadm's range checks. It
// is imported here only: test imports never reach the machineadm binary
// (TestAgentDoesNotLinkTheKubeletValidation keeps it that way).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	kubeletvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	kubeletcodec "k8s.io/kubernetes/pkg/kubelet/kubeletconfig/util/codec"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

var (
	kubeletOnce   sync.Once
	kubeletCodecs *serializer.CodecFactory
	kubeletErr    error
)

// kubeletValidate builds the configuration the kubelet would load from
// the case (the case applied as a JSON merge patch as kubeadm applies
// it, then the kubelet's v1beta1 defaults, its
// --feature-gates flags over featureGates as on the kubelet's command
// line), decoded and converted to the internal type with the kubelet's
// scheme as it loads --config, and returns what the kubelet's
// ValidateKubeletConfiguration says of it, with the kubelet's default
// feature gate (Kubernetes' gates and component-base logging's, which the
// kubelet's command adds).
func kubeletValidate(t *testing.T, tc kubeletRangeCase) []error {
	t.Helper()
	kc, err := kubeletLoad(t, tc)
	if err != nil {
		t.Fatalf("the kubelet cannot load %s: %v", tc.cfg, err)
	}
	verr := kubeletvalidation.ValidateKubeletConfiguration(kc, utilfeature.DefaultMutableFeatureGate.DeepCopy())
	if verr == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	if errors.As(verr, &agg) {
		return agg.Errors()
	}
	return []error{verr}
}

// kubeletLoad decodes the case as the kubelet loads its --config (see
// kubeletValidate) and returns the configuration or the loader's error.
func kubeletLoad(t *testing.T, tc kubeletRangeCase) (kc *kubeletconfig.KubeletConfiguration, err error) {
	t.Helper()
	kubeletOnce.Do(func() {
		// The kubelet's gate logs a warning for each GA gate a case sets.
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
		if kubeletErr = logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate); kubeletErr != nil {
			return
		}
		_, kubeletCodecs, kubeletErr = kubeletscheme.NewSchemeAndCodecs(serializer.EnableStrict)
	})
	if kubeletErr != nil {
		t.Fatal(kubeletErr)
	}
	cfg := map[string]any{}
	if tc.cfg != "" {
		if err := yaml.Unmarshal([]byte(tc.cfg), &cfg); err != nil {
			t.Fatal(err)
		}
	}
	// kubeadm applies spec.node.kubelet.config as a JSON merge patch, with
	// this library, over its defaults (no number the checks read but
	// healthzPort, whose default is the kubelet's): over an empty document
	// here.
	patch, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := jsonpatch.MergePatch([]byte("{}"), patch)
	if err != nil {
		t.Fatal(err)
	}
	cfg = map[string]any{}
	if err := json.Unmarshal(merged, &cfg); err != nil {
		t.Fatal(err)
	}
	gates := kubeletFlagGates(nil)
	for _, f := range tc.flags {
		for k, v := range kubeletFlagGatesOf(f) {
			if gates == nil {
				gates = map[string]bool{}
			}
			gates[k] = v
		}
	}
	if len(gates) > 0 {
		fg, _ := cfg["featureGates"].(map[string]any)
		if fg == nil {
			fg = map[string]any{}
		}
		for k, v := range gates {
			fg[k] = v
		}
		cfg["featureGates"] = fg
	}
	if _, ok := cfg["failCgroupV1"]; !ok {
		// On a cgroup v1 machine the kubelet's Linux checks stop at its
		// refusal of cgroup v1, before userNamespaces; the kubelet on the
		// node, whose cgroups kubeadm's preflight checks, is another host.
		cfg["failCgroupV1"] = false
	}
	cfg["apiVersion"], cfg["kind"] = "kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != nil {
			kc, err = nil, fmt.Errorf("the kubelet's defaulting refuses it: %v", r)
		}
	}()
	return kubeletcodec.DecodeKubeletConfiguration(context.Background(), kubeletCodecs, data)
}

func kubeletFlagGatesOf(v string) map[string]bool {
	return kubeletFlagGates([]machineadm.Arg{{Name: "feature-gates", Value: v}})
}

var (
	// "(--max-pods)", quoted values: never a field name.
	kubeletFlagRE   = regexp.MustCompile(`\(--[^)]*\)`)
	kubeletQuotedRE = regexp.MustCompile(`"[^"]*"`)
	// a word or a dotted word (memorySwap.swapBehavior)
	kubeletWordRE  = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)*`)
	kubeletIndexRE = regexp.MustCompile(`\[[^]]*\]`)
)

// kubeletFieldNames maps the lower-cased JSON names of KubeletConfiguration's
// top-level fields to their spelling.
var kubeletFieldNames = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	t := reflect.TypeFor[kubeletv1beta1.KubeletConfiguration]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out[strings.ToLower(name)] = name
		}
	}
	return out
})

// kubeletMentions returns the fields (dotted JSON paths, without list
// indices or map keys) one kubelet error is about: a field error's path,
// else every KubeletConfiguration field its message names.
func kubeletMentions(e error) []string {
	var fe *field.Error
	if errors.As(e, &fe) {
		return []string{kubeletIndexRE.ReplaceAllString(fe.Field, "")}
	}
	msg := e.Error()
	var out []string
	if strings.Contains(msg, "reserved memory") {
		out = append(out, "reservedMemory")
	}
	scan := kubeletQuotedRE.ReplaceAllString(kubeletFlagRE.ReplaceAllString(msg, ""), "")
	for _, w := range kubeletWordRE.FindAllString(scan, -1) {
		parts := strings.Split(w, ".")
		name, ok := kubeletFieldNames()[strings.ToLower(parts[0])]
		if !ok {
			continue
		}
		for _, sub := range parts[1:] {
			name += "." + strings.ToLower(sub[:1]) + sub[1:]
		}
		out = append(out, name)
	}
	return out
}

// samePathFamily: one path is the other or below it
// (logging.vmodule.verbosity and logging.vmodule).
func samePathFamily(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}

// TestKubeletRangesMatchTheKubelet runs the kubelet's own validation on
// every case of TestKubeletRanges and asserts that machineadm refuses a
// field exactly when the kubelet refuses the configuration for it: each
// field machineadm refuses is named by one of the kubelet's errors, and
// each of the kubelet's errors names a field machineadm refuses (when a
// rule names two fields the spec sets, machineadm reports one of them).
// Errors the kubelet gives for an empty configuration (on this machine:
// failCgroupV1 on a cgroup v1 host) are not the case's and are left out.
func TestKubeletRangesMatchTheKubelet(t *testing.T) {
	baseline := map[string]bool{}
	for _, e := range kubeletValidate(t, kubeletRangeCase{}) {
		t.Logf("the kubelet refuses an empty configuration on this machine: %v", e)
		baseline[e.Error()] = true
	}
	for _, tc := range kubeletTestCases() {
		t.Run(tc.name, func(t *testing.T) {
			var refused []string
			for _, e := range kubeletRangeErrors(t, tc) {
				rel := strings.TrimPrefix(e.Field, kubeletConfigTestPath+".")
				refused = append(refused, kubeletIndexRE.ReplaceAllString(rel, ""))
			}
			var kubelet []error
			for _, e := range kubeletValidate(t, tc) {
				if !baseline[e.Error()] {
					kubelet = append(kubelet, e)
				}
			}
			for _, m := range refused {
				if !slices.ContainsFunc(kubelet, func(e error) bool {
					return slices.ContainsFunc(kubeletMentions(e), func(k string) bool { return samePathFamily(m, k) })
				}) {
					t.Errorf("%s: machineadm refuses %s, the kubelet does not (its errors: %v)", tc.cfg, m, kubelet)
				}
			}
			for _, e := range kubelet {
				mentions := kubeletMentions(e)
				if !slices.ContainsFunc(mentions, func(k string) bool {
					return slices.ContainsFunc(refused, func(m string) bool { return samePathFamily(m, k) })
				}) {
					t.Errorf("%s: the kubelet refuses it (%v, about %q), machineadm refuses %q", tc.cfg, e, mentions, refused)
				}
			}
		})
	}
}

// TestKubeletGateDefaults: the gate defaults machineadm assumes are the
// kubelet's, and the version the rules were read from is the one the
// module builds with.
func TestKubeletGateDefaults(t *testing.T) {
	for name, want := range kubeletGateDefaults {
		if got := utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name)); got != want {
			t.Errorf("feature gate %s: the kubelet's default is %v, kubeletGateDefaults says %v", name, got, want)
		}
	}
	gomod, err := os.ReadFile("../../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/kubernetes")
	}
	if string(m[1]) != KubeletRulesVersion {
		t.Errorf("go.mod builds with k8s.io/kubernetes %s, the kubelet's ranges were read from %s: read validation.go and the v1beta1 defaults of the new version, then update kubeletranges.go", m[1], KubeletRulesVersion)
	}
}

// TestAgentDoesNotLinkTheKubeletValidation: machineadm checks the
// kubelet's ranges itself because the kubelet's validation and defaulting
// packages pull the kubelet's and the API server's packages into the agent
// (+15% binary, +25% peak RSS when tried; docs/design.md). The agent's
// dependency graph, for each platform it is released for, must not hold them.
func TestAgentDoesNotLinkTheKubeletValidation(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	forbidden := []string{
		"k8s.io/kubernetes/pkg/kubelet/apis/config/validation",
		"k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1",
		"k8s.io/kubernetes/pkg/kubelet/apis/config/scheme",
	}
	for _, platform := range []string{"linux/amd64", "linux/arm64", "windows/amd64"} {
		goos, goarch, _ := strings.Cut(platform, "/")
		cmd := exec.Command(goBin, "list", "-deps", "github.com/machineadm/machineadm/cmd/machineadm")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = fmt.Errorf("%w: %s", err, ee.Stderr)
			}
			t.Fatalf("go list -deps (%s): %v", platform, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, "k8s.io/kubelet/config/v1beta1") {
			t.Fatalf("%s: go list -deps lists no k8s.io/kubelet/config/v1beta1; is it the agent's graph?", platform)
		}
		for _, p := range forbidden {
			if slices.Contains(deps, p) {
				t.Errorf("%s: cmd/machineadm links %s; check the kubelet's ranges in pkg/apis/machineadm/validation instead", platform, p)
			}
		}
	}
}

// TestKubeletUnreadableValuesMatchTheKubelet: the kubelet cannot load
// any of the configurations machineadm reports as unreadable.
func TestKubeletUnreadableValuesMatchTheKubelet(t *testing.T) {
	for _, tc := range kubeletUnreadableCases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := kubeletLoad(t, tc); err == nil {
				t.Errorf("%s: the kubelet loads it, machineadm refuses %q", tc.cfg, tc.want)
			}
		})
	}
}

// TestKubeletFlagGateFormatMatchesTheKubelet: the kubelet's own parser
// of --feature-gates reads exactly the values machineadm accepts.
func TestKubeletFlagGateFormatMatchesTheKubelet(t *testing.T) {
	for _, tc := range kubeletFlagGateValues {
		gates := map[string]bool{}
		err := cliflag.NewMapStringBool(&gates).Set(tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("--feature-gates=%q: the kubelet's parser says %v, the case says ok=%v", tc.value, err, tc.ok)
		}
	}
}
