package validation

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// KubeletRulesVersion is the Kubernetes version whose kubelet
// (k8s.io/kubernetes/pkg/kubelet/apis/config/validation and the v1beta1
// defaulting in k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1) the
// ranges, defaults and feature-gate defaults of validateKubeletRanges
// were read from. It is the embedded kubeadm's version; a test runs the
// kubelet's own validation of that version beside these checks.
const KubeletRulesVersion = "v1.37.2"

// The kubelet's v1beta1 defaults (SetDefaults_KubeletConfiguration at
// KubeletRulesVersion) of the fields a check below compares with another
// one, or that the kubelet puts in place of a zero.
const (
	kubeletDefaultEventBurst           = 100
	kubeletDefaultRegistryBurst        = 10
	kubeletDefaultKubeAPIBurst         = 100
	kubeletDefaultMaxPods              = 110
	kubeletDefaultMaxOpenFiles         = 1000000
	kubeletDefaultNodeLeaseDuration    = 40
	kubeletDefaultPort                 = 10250
	kubeletDefaultImageGCHigh          = 85
	kubeletDefaultImageGCLow           = 80
	kubeletDefaultImageMinimumGCAge    = 2 * time.Minute
	kubeletDefaultCPUCFSQuotaPeriod    = 100 * time.Millisecond
	kubeletDefaultLogFlushFrequency    = 5 * time.Second
	kubeletPreviousThrottlingFactor    = 0.9 // accepted without MemoryQoS
	kubeletUserNamespaceUnit           = 65536
	kubeletMaxSamplingRatePerMillion   = 1000000
	kubeletMinContainerLogMonitorSecs  = 3
	kubeletMinCrashLoopMaxRestartMilli = 1000
	kubeletMaxCrashLoopMaxRestartMilli = 300000
)

// kubeletGateDefaults are the defaults at KubeletRulesVersion
// (k8s.io/kubernetes/pkg/features) of the feature gates that decide which
// of the kubelet's range checks apply. A test compares them with the
// kubelet's feature gate.
var kubeletGateDefaults = map[string]bool{
	"CustomCPUCFSQuotaPeriod":                true,
	"GracefulNodeShutdown":                   true,
	"GracefulNodeShutdownBasedOnPodPriority": true,
	"KubeletCrashLoopBackOffMax":             true,
	"MemoryQoS":                              true,
}

// validateKubeletRanges checks the numbers and durations of the partial
// KubeletConfiguration of spec.node.kubelet.config against the ranges the
// kubelet accepts, so that a value the kubelet would refuse when it starts
// (after kubeadm and the host phases ran) is bad input before anything
// changes. set is the configuration as written, kc the same decoded into
// kubelet.config.k8s.io/v1beta1 without its null members (the merge patch
// removes those fields), args spec.node.kubelet.extraArgs (its
// --feature-gates flags win over featureGates, as on the kubelet's command
// line), join whether the spec's action is Join, and p the path of the
// configuration. Errors are field.Invalid at
// p.<jsonField> (nested fields by their JSON path) with the accepted range.
//
// Source: the range and cross-field checks of the kubelet's
// ValidateKubeletConfiguration (k8s.io/kubernetes/pkg/kubelet/apis/config/validation,
// validation.go and validation_linux.go, with component-base's logging and
// tracing validation it calls) at KubeletRulesVersion. machineadm does not
// link that package: it pulls the kubelet's and the API server's packages
// into the agent (docs/design.md, "The kubelet's ranges"). The kubelet
// validates its defaulted configuration; fields the spec leaves out get
// the kubelet's defaults, which pass, and a zero that the kubelet's
// v1beta1 defaulting replaces by its default is accepted as the kubelet
// accepts it. A cross-field rule with one side set is checked against the
// kubelet's default of the other. On a join, kubeadm's base is the
// cluster's kubelet-config ConfigMap rather than the defaults, so such an
// error says to give the other side in the spec when the cluster sets it.
//
// Checked (names are the JSON fields; "0 = default" marks a zero the
// kubelet replaces by its default):
//   - at least 0: eventBurst, registryBurst, kubeAPIBurst, maxPods,
//     maxOpenFiles (0 = default for each), eventRecordQPS, registryPullQPS,
//     kubeAPIQPS, podsPerCore; nodeStatusMaxImages at least -1;
//   - nodeLeaseDurationSeconds above 0 (0 = default);
//   - port 1–65535 (0 = default); healthzPort and readOnlyPort 1–65535 or 0;
//   - oomScoreAdj -1000–1000; imageGCHighThresholdPercent and
//     imageGCLowThresholdPercent 0–100, low below high;
//   - iptablesMasqueradeBit and iptablesDropBit 0–31;
//   - containerLogMaxFiles at least 2, containerLogMaxWorkers at least 1,
//     containerLogMonitorInterval at least 3s;
//   - maxParallelImagePulls at least 1, and 1 when serializeImagePulls is
//     true (the kubelet's default unless maxParallelImagePulls is above 1);
//   - cpuCFSQuotaPeriod 1ms–1s with the CustomCPUCFSQuotaPeriod gate, else 100ms;
//   - imageMinimumGCAge not negative (0 = default), imageMaximumGCAge not
//     negative and, when above 0, above imageMinimumGCAge;
//   - with the GracefulNodeShutdown gate, shutdownGracePeriod and
//     shutdownGracePeriodCriticalPods 0 or at least 1s, the second not
//     above the first; without it, neither above 0;
//     shutdownGracePeriodByPodPriority only with
//     GracefulNodeShutdownBasedOnPodPriority, and not together with either;
//   - crashLoopBackOff.maxContainerRestartPeriod 1s–300s (in whole
//     milliseconds) with the KubeletCrashLoopBackOffMax gate, else unset;
//   - memoryThrottlingFactor above 0 and at most 1, and without the
//     MemoryQoS gate unset or 0.9;
//   - logging.flushFrequency above 0 (0 = default), logging.verbosity and
//     logging.vmodule[].verbosity at most 2147483647;
//   - tracing.samplingRatePerMillion 0–1000000;
//   - reservedMemory[].limits not zero, each resource once per numaNode;
//   - on Linux, userNamespaces.idsPerPod a multiple of 65536 from 65536
//     to 4294967295.
//
// The feature gates are the kubelet's defaults at KubeletRulesVersion
// (kubeletGateDefaults), then featureGates, then --feature-gates flags.
// Not checked here: the kubelet's rules that are not about numbers (names,
// policies, feature-gate names and their locks), and those that depend on
// the machine rather than the spec (cgroup v1).
func validateKubeletRanges(r *Result, set map[string]any, kc *kubeletv1beta1.KubeletConfiguration, args []machineadm.Arg, join bool, p *field.Path) {
	c := kubeletRangeChecker{r: r, set: set, kc: kc, gates: kubeletFlagGates(args), join: join, p: p}

	c.atLeast("eventBurst", int64(kc.EventBurst), 0, fmt.Sprintf("must be 0 or more (0 stands for the kubelet's default, %d)", kubeletDefaultEventBurst))
	c.atLeast("registryBurst", int64(kc.RegistryBurst), 0, fmt.Sprintf("must be 0 or more (0 stands for the kubelet's default, %d)", kubeletDefaultRegistryBurst))
	c.atLeast("kubeAPIBurst", int64(kc.KubeAPIBurst), 0, fmt.Sprintf("must be 0 or more (0 stands for the kubelet's default, %d)", kubeletDefaultKubeAPIBurst))
	c.atLeast("maxPods", int64(kc.MaxPods), 0, fmt.Sprintf("must be 0 or more (0 stands for the kubelet's default, %d)", kubeletDefaultMaxPods))
	c.atLeast("maxOpenFiles", kc.MaxOpenFiles, 0, fmt.Sprintf("must be 0 or more (0 stands for the kubelet's default, %d)", kubeletDefaultMaxOpenFiles))
	c.atLeast("nodeLeaseDurationSeconds", int64(kc.NodeLeaseDurationSeconds), 0, fmt.Sprintf("must be more than 0 seconds (0 stands for the kubelet's default, %d)", kubeletDefaultNodeLeaseDuration))
	c.atLeastPtr("eventRecordQPS", kc.EventRecordQPS, 0, "must be 0 or more")
	c.atLeastPtr("registryPullQPS", kc.RegistryPullQPS, 0, "must be 0 or more")
	c.atLeastPtr("kubeAPIQPS", kc.KubeAPIQPS, 0, "must be 0 or more")
	c.atLeast("podsPerCore", int64(kc.PodsPerCore), 0, "must be 0 or more (0: no limit per core)")
	c.atLeastPtr("nodeStatusMaxImages", kc.NodeStatusMaxImages, -1, "must be -1 (no limit) or more")

	if kc.Port != 0 {
		c.between("port", int64(kc.Port), 1, 65535, fmt.Sprintf("must be between 1 and 65535 (0 stands for the kubelet's default, %d)", kubeletDefaultPort))
	}
	if v := kc.HealthzPort; v != nil && *v != 0 {
		c.between("healthzPort", int64(*v), 1, 65535, "must be between 1 and 65535, or 0 to turn the healthz endpoint off")
	}
	if kc.ReadOnlyPort != 0 {
		c.between("readOnlyPort", int64(kc.ReadOnlyPort), 1, 65535, "must be between 1 and 65535, or 0 to turn the read-only port off")
	}
	if v := kc.OOMScoreAdj; v != nil {
		c.between("oomScoreAdj", int64(*v), -1000, 1000, "must be between -1000 and 1000")
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"iptablesMasqueradeBit", kc.IPTablesMasqueradeBit}, {"iptablesDropBit", kc.IPTablesDropBit}} {
		if f.v != nil {
			c.between(f.name, int64(*f.v), 0, 31, "must be between 0 and 31 (a bit of the packet mark)")
		}
	}
	c.imageGCThresholds()

	c.atLeastPtr("containerLogMaxFiles", kc.ContainerLogMaxFiles, 2, "must be 2 or more (the file being written and at least one rotated)")
	c.atLeastPtr("containerLogMaxWorkers", kc.ContainerLogMaxWorkers, 1, "must be 1 or more")
	if d := kc.ContainerLogMonitorInterval; d != nil && d.Duration.Seconds() < kubeletMinContainerLogMonitorSecs {
		c.bad("containerLogMonitorInterval", d.Duration.String(), "must be at least 3s")
	}
	c.parallelImagePulls()
	c.cpuCFSQuotaPeriod()
	c.imageGCAges()
	c.shutdownGracePeriods()
	c.crashLoopBackOff()
	c.memoryThrottlingFactor()
	c.logging()
	if t := kc.Tracing; t != nil && t.SamplingRatePerMillion != nil {
		c.between("tracing.samplingRatePerMillion", int64(*t.SamplingRatePerMillion), 0, kubeletMaxSamplingRatePerMillion, "must be between 0 and 1000000")
	}
	c.reservedMemory()
	// The kubelet checks user namespaces on Linux only (validation_linux.go).
	if c.r.targetOS() == machineadm.OSLinux {
		c.userNamespaces()
	}
}

// kubeletRangeChecker holds what validateKubeletRanges' checks share.
type kubeletRangeChecker struct {
	r     *Result
	set   map[string]any
	kc    *kubeletv1beta1.KubeletConfiguration
	gates map[string]bool // from --feature-gates flags
	join  bool            // spec.action Join
	p     *field.Path
}

// bad reports the field at the dotted JSON path name.
func (c *kubeletRangeChecker) bad(name string, v any, msg string) {
	c.r.Errors = append(c.r.Errors, field.Invalid(DottedPath(c.p, name), v, msg))
}

func (c *kubeletRangeChecker) atLeast(name string, v, min int64, msg string) {
	if v < min {
		c.bad(name, v, msg)
	}
}

func (c *kubeletRangeChecker) atLeastPtr(name string, v *int32, min int64, msg string) {
	if v != nil {
		c.atLeast(name, int64(*v), min, msg)
	}
}

func (c *kubeletRangeChecker) between(name string, v, min, max int64, msg string) {
	if v < min || v > max {
		c.bad(name, v, msg)
	}
}

// isSet reports whether the configuration as written holds the dotted
// JSON path name (with any value, null included).
func (c *kubeletRangeChecker) isSet(name string) bool {
	m := c.set
	parts := strings.Split(name, ".")
	for i, part := range parts {
		v, ok := m[part]
		if !ok {
			return false
		}
		if i == len(parts)-1 {
			return true
		}
		if m, ok = v.(map[string]any); !ok {
			return false
		}
	}
	return false
}

// gate reports whether the kubelet runs with the feature gate name on:
// the --feature-gates flags, else featureGates, else its default.
func (c *kubeletRangeChecker) gate(name string) bool {
	if v, ok := c.gates[name]; ok {
		return v
	}
	if v, ok := c.kc.FeatureGates[name]; ok {
		return v
	}
	return kubeletGateDefaults[name]
}

// gateOff names where the gate was turned off, for messages.
func (c *kubeletRangeChecker) gateOff(name string) string {
	if _, ok := c.gates[name]; ok {
		return "the " + name + " feature gate is off (--feature-gates in extraArgs)"
	}
	return "the " + name + " feature gate is off (featureGates)"
}

// setOrDefault describes a field's value for a cross-field message: the
// value written, or the kubelet's default.
func (c *kubeletRangeChecker) setOrDefault(name string, v any) string {
	if c.isSet(name) {
		return fmt.Sprintf("%s (%v)", name, v)
	}
	if c.join {
		// kubeadm join patches the cluster's kubelet-config, not the
		// kubelet's defaults.
		return fmt.Sprintf("%s (%v, the kubelet's default; a join starts from the cluster's kubelet-config ConfigMap: if that sets %s, give the same value here)", name, v, name)
	}
	return fmt.Sprintf("%s (%v, the kubelet's default)", name, v)
}

func (c *kubeletRangeChecker) imageGCThresholds() {
	kc := c.kc
	high, low := int64(kubeletDefaultImageGCHigh), int64(kubeletDefaultImageGCLow)
	highOK, lowOK := true, true
	if v := kc.ImageGCHighThresholdPercent; v != nil {
		high = int64(*v)
		if high < 0 || high > 100 {
			c.bad("imageGCHighThresholdPercent", high, "must be between 0 and 100 (percent of the image file system)")
			highOK = false
		}
	}
	if v := kc.ImageGCLowThresholdPercent; v != nil {
		low = int64(*v)
		if low < 0 || low > 100 {
			c.bad("imageGCLowThresholdPercent", low, "must be between 0 and 100 (percent of the image file system)")
			lowOK = false
		}
	}
	if !highOK || !lowOK || low < high {
		return
	}
	// The kubelet also refuses this pair when one of them is out of
	// range; that one is reported already.
	if kc.ImageGCLowThresholdPercent != nil {
		c.bad("imageGCLowThresholdPercent", low, "must be less than "+c.setOrDefault("imageGCHighThresholdPercent", high))
	} else {
		c.bad("imageGCHighThresholdPercent", high, "must be more than "+c.setOrDefault("imageGCLowThresholdPercent", low))
	}
}

func (c *kubeletRangeChecker) parallelImagePulls() {
	kc := c.kc
	n := kc.MaxParallelImagePulls
	if n == nil {
		return
	}
	if *n < 1 {
		c.bad("maxParallelImagePulls", *n, "must be 1 or more")
		return
	}
	// The kubelet defaults serializeImagePulls to false when
	// maxParallelImagePulls is above 1, to true otherwise.
	serialize := *n < 2
	if kc.SerializeImagePulls != nil {
		serialize = *kc.SerializeImagePulls
	}
	if serialize && *n > 1 {
		c.bad("maxParallelImagePulls", *n, "must be 1 while serializeImagePulls is true; set serializeImagePulls: false (or leave it out) to pull in parallel")
	}
}

func (c *kubeletRangeChecker) cpuCFSQuotaPeriod() {
	d := c.kc.CPUCFSQuotaPeriod
	if d == nil {
		return
	}
	if !c.gate("CustomCPUCFSQuotaPeriod") {
		if d.Duration != kubeletDefaultCPUCFSQuotaPeriod {
			c.bad("cpuCFSQuotaPeriod", d.Duration.String(), "must be 100ms (the kubelet's default) while "+c.gateOff("CustomCPUCFSQuotaPeriod"))
		}
		return
	}
	if d.Duration < time.Millisecond || d.Duration > time.Second {
		c.bad("cpuCFSQuotaPeriod", d.Duration.String(), "must be between 1ms and 1s")
	}
}

func (c *kubeletRangeChecker) imageGCAges() {
	kc := c.kc
	minAge := kc.ImageMinimumGCAge.Duration
	if minAge < 0 {
		c.bad("imageMinimumGCAge", minAge.String(), fmt.Sprintf("must not be negative (0 stands for the kubelet's default, %v)", kubeletDefaultImageMinimumGCAge))
	}
	if minAge == 0 {
		minAge = kubeletDefaultImageMinimumGCAge
	}
	maxAge := kc.ImageMaximumGCAge.Duration
	switch {
	case maxAge < 0:
		c.bad("imageMaximumGCAge", maxAge.String(), "must not be negative (0: images are kept however long they stay unused)")
	case maxAge > 0 && maxAge <= minAge:
		c.bad("imageMaximumGCAge", maxAge.String(), "must be more than "+c.setOrDefault("imageMinimumGCAge", minAge)+", or 0 for no maximum age")
	}
}

func (c *kubeletRangeChecker) shutdownGracePeriods() {
	kc := c.kc
	grace, critical := kc.ShutdownGracePeriod.Duration, kc.ShutdownGracePeriodCriticalPods.Duration
	if !c.gate("GracefulNodeShutdown") {
		for _, f := range []struct {
			name string
			d    time.Duration
		}{{"shutdownGracePeriod", grace}, {"shutdownGracePeriodCriticalPods", critical}} {
			if f.d > 0 {
				c.bad(f.name, f.d.String(), "must be 0 while "+c.gateOff("GracefulNodeShutdown"))
			}
		}
	} else {
		graceOK, criticalOK := true, true
		for _, f := range []struct {
			name string
			d    time.Duration
			ok   *bool
		}{{"shutdownGracePeriod", grace, &graceOK}, {"shutdownGracePeriodCriticalPods", critical, &criticalOK}} {
			if f.d < 0 || f.d > 0 && f.d < time.Second {
				c.bad(f.name, f.d.String(), "must be 0 (no graceful shutdown) or at least 1s")
				*f.ok = false
			}
		}
		if critical > grace && graceOK && criticalOK {
			if c.isSet("shutdownGracePeriodCriticalPods") {
				c.bad("shutdownGracePeriodCriticalPods", critical.String(), "must not be more than "+c.setOrDefault("shutdownGracePeriod", grace)+": it is the part of that period kept for critical pods")
			} else {
				c.bad("shutdownGracePeriod", grace.String(), "must not be less than "+c.setOrDefault("shutdownGracePeriodCriticalPods", critical))
			}
		}
	}
	if len(kc.ShutdownGracePeriodByPodPriority) > 0 {
		switch {
		case !c.gate("GracefulNodeShutdownBasedOnPodPriority"):
			c.bad("shutdownGracePeriodByPodPriority", field.OmitValueType{}, "must not be set while "+c.gateOff("GracefulNodeShutdownBasedOnPodPriority"))
		case grace > 0 || critical > 0:
			c.bad("shutdownGracePeriodByPodPriority", field.OmitValueType{}, "must not be set together with shutdownGracePeriod or shutdownGracePeriodCriticalPods: give the periods per priority here, or those two, not both")
		}
	}
}

func (c *kubeletRangeChecker) crashLoopBackOff() {
	d := c.kc.CrashLoopBackOff.MaxContainerRestartPeriod
	if d == nil {
		return
	}
	const name = "crashLoopBackOff.maxContainerRestartPeriod"
	if !c.gate("KubeletCrashLoopBackOffMax") {
		c.bad(name, d.Duration.String(), "must not be set while "+c.gateOff("KubeletCrashLoopBackOffMax"))
		return
	}
	// The kubelet compares whole milliseconds.
	if ms := d.Duration.Milliseconds(); ms < kubeletMinCrashLoopMaxRestartMilli || ms > kubeletMaxCrashLoopMaxRestartMilli {
		c.bad(name, d.Duration.String(), "must be between 1s and 300s")
	}
}

func (c *kubeletRangeChecker) memoryThrottlingFactor() {
	f := c.kc.MemoryThrottlingFactor
	if f == nil {
		return
	}
	if *f <= 0 || *f > 1 {
		c.bad("memoryThrottlingFactor", *f, "must be more than 0 and at most 1")
		return
	}
	if !c.gate("MemoryQoS") && *f != kubeletPreviousThrottlingFactor {
		c.bad("memoryThrottlingFactor", *f, "must be left out (or 0.9) while "+c.gateOff("MemoryQoS"))
	}
}

func (c *kubeletRangeChecker) logging() {
	l := &c.kc.Logging
	if d := l.FlushFrequency.Duration.Duration; d < 0 {
		c.bad("logging.flushFrequency", d.String(), fmt.Sprintf("must be more than 0 (0 stands for the default, %v)", kubeletDefaultLogFlushFrequency))
	}
	if l.Verbosity > math.MaxInt32 {
		c.bad("logging.verbosity", uint32(l.Verbosity), fmt.Sprintf("must be at most %d", math.MaxInt32))
	}
	for i, m := range l.VModule {
		if m.Verbosity > math.MaxInt32 {
			c.r.Errors = append(c.r.Errors, field.Invalid(c.p.Child("logging", "vmodule").Index(i).Child("verbosity"), uint32(m.Verbosity), fmt.Sprintf("must be at most %d", math.MaxInt32)))
		}
	}
}

func (c *kubeletRangeChecker) reservedMemory() {
	type numaResource struct {
		node     int32
		resource string
	}
	first := map[numaResource]int{}
	for i, rm := range c.kc.ReservedMemory {
		for _, rn := range slices.Sorted(maps.Keys(rm.Limits)) {
			name := string(rn)
			lp := c.p.Child("reservedMemory").Index(i).Child("limits").Key(name)
			if q := rm.Limits[rn]; q.IsZero() {
				c.r.Errors = append(c.r.Errors, field.Invalid(lp, q.String(), "must not be zero: leave the resource out to reserve none"))
			}
			k := numaResource{rm.NumaNode, name}
			if j, dup := first[k]; dup {
				c.r.Errors = append(c.r.Errors, field.Invalid(lp, field.OmitValueType{}, fmt.Sprintf("must be given once per NUMA node: reservedMemory[%d] reserves %s on NUMA node %d already", j, name, rm.NumaNode)))
				continue
			}
			first[k] = i
		}
	}
}

func (c *kubeletRangeChecker) userNamespaces() {
	u := c.kc.UserNamespaces
	if u == nil || u.IDsPerPod == nil {
		return
	}
	const name = "userNamespaces.idsPerPod"
	n := *u.IDsPerPod
	switch {
	case n < kubeletUserNamespaceUnit:
		c.bad(name, n, fmt.Sprintf("must be at least %d", kubeletUserNamespaceUnit))
	case n%kubeletUserNamespaceUnit != 0:
		c.bad(name, n, fmt.Sprintf("must be a multiple of %d", kubeletUserNamespaceUnit))
	case n > math.MaxUint32:
		c.bad(name, n, fmt.Sprintf("must be at most %d (a multiple of %d)", int64(math.MaxUint32), kubeletUserNamespaceUnit))
	}
}

// validateKubeletFlagGates refuses a --feature-gates value in the
// kubelet's extraArgs (at p, spec.node.kubelet.extraArgs) that the
// kubelet's flag parser refuses, which would stop the kubelet at start
// after the host phases ran: each comma-separated entry must be
// Name=Value with a Value strconv.ParseBool reads (true, false, 1, 0, t,
// f, TRUE, False, ...), spaces around either side allowed; empty entries
// are skipped, a blank one is not. Errors are field.Invalid at
// p[i].value naming the entry (at most 80 characters of it, quoted).
//
// Source: k8s.io/component-base/cli/flag MapStringBool.Set, the parser
// of the kubelet's --feature-gates. Gate names are not checked here.
func validateKubeletFlagGates(r *Result, args []machineadm.Arg, p *field.Path) {
	for i, a := range args {
		if a.Name != "feature-gates" {
			continue
		}
		for _, kv := range strings.Split(a.Value, ",") {
			if kv == "" {
				continue
			}
			var problem string
			if _, v, ok := strings.Cut(kv, "="); !ok {
				problem = "has no '='"
			} else if _, err := strconv.ParseBool(strings.TrimSpace(v)); err != nil {
				problem = "has no true or false after '='"
			}
			if problem != "" {
				r.Errors = append(r.Errors, field.Invalid(p.Index(i).Child("value"), field.OmitValueType{}, fmt.Sprintf("must be comma-separated Name=true or Name=false pairs (the kubelet's --feature-gates): entry %.80q %s", kv, problem)))
			}
		}
	}
}

// kubeletFlagGates reads the --feature-gates flags of the kubelet's
// extraArgs ("Name=true,Other=false"; later flags win). Entries the
// kubelet would refuse (validateKubeletFlagGates reports them) are left
// out: only the gates read.
func kubeletFlagGates(args []machineadm.Arg) map[string]bool {
	var out map[string]bool
	for _, a := range args {
		if a.Name != "feature-gates" {
			continue
		}
		for _, kv := range strings.Split(a.Value, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				continue
			}
			if out == nil {
				out = map[string]bool{}
			}
			out[strings.TrimSpace(k)] = b
		}
	}
	return out
}
