package validation

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// kubeletRangeCase is one partial KubeletConfiguration (YAML, as in
// spec.node.kubelet.config), optional kubelet --feature-gates flag values,
// and the fields (JSON paths below the config) machineadm must refuse.
// TestKubeletRangesMatchTheKubelet runs the kubelet's own validation on
// each case too.
type kubeletRangeCase struct {
	name  string
	cfg   string
	flags []string
	join  bool
	want  []string
}

// kubeletRangeCases: every checked field in range, at its edges and out
// of range, and the cross-field rules with one side or both set.
var kubeletRangeCases = []kubeletRangeCase{
	{name: "maxPods negative", cfg: `{maxPods: -1}`, want: []string{"maxPods"}},
	{name: "maxPods 0 is the default", cfg: `{maxPods: 0}`},
	{name: "maxPods 250", cfg: `{maxPods: 250}`},
	{name: "eventBurst negative", cfg: `{eventBurst: -1}`, want: []string{"eventBurst"}},
	{name: "eventBurst 0 and 1", cfg: `{eventBurst: 0, registryBurst: 1}`},
	{name: "registryBurst negative", cfg: `{registryBurst: -1}`, want: []string{"registryBurst"}},
	{name: "kubeAPIBurst negative", cfg: `{kubeAPIBurst: -1}`, want: []string{"kubeAPIBurst"}},
	{name: "kubeAPIBurst 0", cfg: `{kubeAPIBurst: 0}`},
	{name: "maxOpenFiles negative", cfg: `{maxOpenFiles: -1}`, want: []string{"maxOpenFiles"}},
	{name: "maxOpenFiles 0 and large", cfg: `{maxOpenFiles: 0}`},
	{name: "maxOpenFiles large", cfg: `{maxOpenFiles: 10000000000}`},
	{name: "nodeLeaseDurationSeconds negative", cfg: `{nodeLeaseDurationSeconds: -1}`, want: []string{"nodeLeaseDurationSeconds"}},
	{name: "nodeLeaseDurationSeconds 0 is the default", cfg: `{nodeLeaseDurationSeconds: 0}`},
	{name: "nodeLeaseDurationSeconds 1", cfg: `{nodeLeaseDurationSeconds: 1}`},
	{name: "QPS negative", cfg: `{eventRecordQPS: -1, registryPullQPS: -1, kubeAPIQPS: -1}`, want: []string{"eventRecordQPS", "kubeAPIQPS", "registryPullQPS"}},
	{name: "QPS 0", cfg: `{eventRecordQPS: 0, registryPullQPS: 0, kubeAPIQPS: 0}`},
	{name: "podsPerCore negative", cfg: `{podsPerCore: -1}`, want: []string{"podsPerCore"}},
	{name: "podsPerCore 0 and 10", cfg: `{podsPerCore: 10}`},
	{name: "nodeStatusMaxImages -2", cfg: `{nodeStatusMaxImages: -2}`, want: []string{"nodeStatusMaxImages"}},
	{name: "nodeStatusMaxImages -1 and 0", cfg: `{nodeStatusMaxImages: -1}`},
	{name: "nodeStatusMaxImages 0", cfg: `{nodeStatusMaxImages: 0}`},

	{name: "port edges", cfg: `{port: 1}`},
	{name: "port 65535", cfg: `{port: 65535}`},
	{name: "port 0 is the default", cfg: `{port: 0}`},
	{name: "port 65536", cfg: `{port: 65536}`, want: []string{"port"}},
	{name: "port negative", cfg: `{port: -1}`, want: []string{"port"}},
	{name: "healthzPort 0 turns it off", cfg: `{healthzPort: 0}`},
	{name: "healthzPort 1 and 65535", cfg: `{healthzPort: 1, readOnlyPort: 65535}`},
	{name: "healthzPort 70000", cfg: `{healthzPort: 70000}`, want: []string{"healthzPort"}},
	{name: "healthzPort 65536 and -1", cfg: `{healthzPort: 65536, readOnlyPort: -1}`, want: []string{"healthzPort", "readOnlyPort"}},
	{name: "readOnlyPort 0 and 65536", cfg: `{readOnlyPort: 65536}`, want: []string{"readOnlyPort"}},
	{name: "readOnlyPort 0", cfg: `{readOnlyPort: 0}`},

	{name: "oomScoreAdj edges", cfg: `{oomScoreAdj: -1000}`},
	{name: "oomScoreAdj 1000", cfg: `{oomScoreAdj: 1000}`},
	{name: "oomScoreAdj -1001", cfg: `{oomScoreAdj: -1001}`, want: []string{"oomScoreAdj"}},
	{name: "oomScoreAdj 5000", cfg: `{oomScoreAdj: 5000}`, want: []string{"oomScoreAdj"}},
	{name: "iptables bits 0 and 31", cfg: `{iptablesMasqueradeBit: 0, iptablesDropBit: 31}`},
	{name: "iptables bits 32 and -1", cfg: `{iptablesMasqueradeBit: 32, iptablesDropBit: -1}`, want: []string{"iptablesDropBit", "iptablesMasqueradeBit"}},

	{name: "imageGCHighThresholdPercent 100", cfg: `{imageGCHighThresholdPercent: 100}`},
	{name: "imageGCHighThresholdPercent 150", cfg: `{imageGCHighThresholdPercent: 150}`, want: []string{"imageGCHighThresholdPercent"}},
	{name: "imageGCHighThresholdPercent 101", cfg: `{imageGCHighThresholdPercent: 101}`, want: []string{"imageGCHighThresholdPercent"}},
	{name: "imageGCHighThresholdPercent -1", cfg: `{imageGCHighThresholdPercent: -1}`, want: []string{"imageGCHighThresholdPercent"}},
	{name: "imageGCHighThresholdPercent 81 above the default low", cfg: `{imageGCHighThresholdPercent: 81}`},
	{name: "imageGCHighThresholdPercent 80 at the default low", cfg: `{imageGCHighThresholdPercent: 80}`, want: []string{"imageGCHighThresholdPercent"}},
	{name: "imageGCHighThresholdPercent 0 below the default low", cfg: `{imageGCHighThresholdPercent: 0}`, want: []string{"imageGCHighThresholdPercent"}},
	{name: "imageGCLowThresholdPercent 0", cfg: `{imageGCLowThresholdPercent: 0}`},
	{name: "imageGCLowThresholdPercent 84 below the default high", cfg: `{imageGCLowThresholdPercent: 84}`},
	{name: "imageGCLowThresholdPercent 85 at the default high", cfg: `{imageGCLowThresholdPercent: 85}`, want: []string{"imageGCLowThresholdPercent"}},
	{name: "imageGCLowThresholdPercent -1", cfg: `{imageGCLowThresholdPercent: -1}`, want: []string{"imageGCLowThresholdPercent"}},
	{name: "imageGC thresholds 40 below 50", cfg: `{imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 40}`},
	{name: "imageGC thresholds equal", cfg: `{imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 50}`, want: []string{"imageGCLowThresholdPercent"}},
	{name: "imageGC thresholds 100 and 0", cfg: `{imageGCHighThresholdPercent: 100, imageGCLowThresholdPercent: 0}`},
	{name: "imageGC low 101 above high", cfg: `{imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 101}`, want: []string{"imageGCLowThresholdPercent"}},

	{name: "containerLogMaxFiles 1", cfg: `{containerLogMaxFiles: 1}`, want: []string{"containerLogMaxFiles"}},
	{name: "containerLogMaxFiles 0", cfg: `{containerLogMaxFiles: 0}`, want: []string{"containerLogMaxFiles"}},
	{name: "containerLogMaxFiles 2", cfg: `{containerLogMaxFiles: 2}`},
	{name: "containerLogMaxWorkers 0", cfg: `{containerLogMaxWorkers: 0}`, want: []string{"containerLogMaxWorkers"}},
	{name: "containerLogMaxWorkers 1", cfg: `{containerLogMaxWorkers: 1}`},
	{name: "containerLogMonitorInterval 3s", cfg: `{containerLogMonitorInterval: 3s}`},
	{name: "containerLogMonitorInterval 2999ms", cfg: `{containerLogMonitorInterval: 2999ms}`, want: []string{"containerLogMonitorInterval"}},
	{name: "containerLogMonitorInterval 0s", cfg: `{containerLogMonitorInterval: 0s}`, want: []string{"containerLogMonitorInterval"}},

	{name: "maxParallelImagePulls 0", cfg: `{maxParallelImagePulls: 0}`, want: []string{"maxParallelImagePulls"}},
	{name: "maxParallelImagePulls -1", cfg: `{maxParallelImagePulls: -1}`, want: []string{"maxParallelImagePulls"}},
	{name: "maxParallelImagePulls 1", cfg: `{maxParallelImagePulls: 1}`},
	{name: "maxParallelImagePulls 5 turns serializeImagePulls off", cfg: `{maxParallelImagePulls: 5}`},
	{name: "maxParallelImagePulls 5 with serializeImagePulls", cfg: `{maxParallelImagePulls: 5, serializeImagePulls: true}`, want: []string{"maxParallelImagePulls"}},
	{name: "maxParallelImagePulls 1 with serializeImagePulls", cfg: `{maxParallelImagePulls: 1, serializeImagePulls: true}`},
	{name: "maxParallelImagePulls 5 without serializeImagePulls", cfg: `{maxParallelImagePulls: 5, serializeImagePulls: false}`},
	{name: "serializeImagePulls false alone", cfg: `{serializeImagePulls: false}`},

	{name: "cpuCFSQuotaPeriod 1ms", cfg: `{cpuCFSQuotaPeriod: 1ms}`},
	{name: "cpuCFSQuotaPeriod 1s", cfg: `{cpuCFSQuotaPeriod: 1s}`},
	{name: "cpuCFSQuotaPeriod 999us", cfg: `{cpuCFSQuotaPeriod: 999us}`, want: []string{"cpuCFSQuotaPeriod"}},
	{name: "cpuCFSQuotaPeriod 1001ms", cfg: `{cpuCFSQuotaPeriod: 1001ms}`, want: []string{"cpuCFSQuotaPeriod"}},
	{name: "cpuCFSQuotaPeriod 2s", cfg: `{cpuCFSQuotaPeriod: 2s}`, want: []string{"cpuCFSQuotaPeriod"}},
	{name: "cpuCFSQuotaPeriod 0s", cfg: `{cpuCFSQuotaPeriod: 0s}`, want: []string{"cpuCFSQuotaPeriod"}},
	{name: "cpuCFSQuotaPeriod 100ms without its gate", cfg: `{cpuCFSQuotaPeriod: 100ms, featureGates: {CustomCPUCFSQuotaPeriod: false}}`},
	{name: "cpuCFSQuotaPeriod 50ms without its gate", cfg: `{cpuCFSQuotaPeriod: 50ms, featureGates: {CustomCPUCFSQuotaPeriod: false}}`, want: []string{"cpuCFSQuotaPeriod"}},
	{name: "cpuCFSQuotaPeriod 50ms, gate off by flag", cfg: `{cpuCFSQuotaPeriod: 50ms}`, flags: []string{"CustomCPUCFSQuotaPeriod=false"}, want: []string{"cpuCFSQuotaPeriod"}},
	{name: "cpuCFSQuotaPeriod 50ms, the flag turns the gate back on", cfg: `{cpuCFSQuotaPeriod: 50ms, featureGates: {CustomCPUCFSQuotaPeriod: false}}`, flags: []string{"CustomCPUCFSQuotaPeriod=false", "CustomCPUCFSQuotaPeriod=true"}},

	{name: "imageMinimumGCAge negative", cfg: `{imageMinimumGCAge: -1s}`, want: []string{"imageMinimumGCAge"}},
	{name: "imageMinimumGCAge 0 and 1s", cfg: `{imageMinimumGCAge: 1s}`},
	{name: "imageMinimumGCAge 0s is the default", cfg: `{imageMinimumGCAge: 0s}`},
	{name: "imageMaximumGCAge negative", cfg: `{imageMaximumGCAge: -1s}`, want: []string{"imageMaximumGCAge"}},
	{name: "imageMaximumGCAge 0s", cfg: `{imageMaximumGCAge: 0s}`},
	{name: "imageMaximumGCAge at the default minimum", cfg: `{imageMaximumGCAge: 2m}`, want: []string{"imageMaximumGCAge"}},
	{name: "imageMaximumGCAge above the default minimum", cfg: `{imageMaximumGCAge: 2m1s}`},
	{name: "imageMaximumGCAge equal to the minimum", cfg: `{imageMaximumGCAge: 1h, imageMinimumGCAge: 1h}`, want: []string{"imageMaximumGCAge"}},
	{name: "imageMaximumGCAge above the minimum", cfg: `{imageMaximumGCAge: 1h, imageMinimumGCAge: 30m}`},

	{name: "shutdownGracePeriod 1s", cfg: `{shutdownGracePeriod: 1s}`},
	{name: "shutdownGracePeriod 0s", cfg: `{shutdownGracePeriod: 0s}`},
	{name: "shutdownGracePeriod 500ms", cfg: `{shutdownGracePeriod: 500ms}`, want: []string{"shutdownGracePeriod"}},
	{name: "shutdownGracePeriod negative", cfg: `{shutdownGracePeriod: -1s}`, want: []string{"shutdownGracePeriod"}},
	{name: "shutdownGracePeriodCriticalPods above the default period", cfg: `{shutdownGracePeriodCriticalPods: 10s}`, want: []string{"shutdownGracePeriodCriticalPods"}},
	{name: "shutdownGracePeriodCriticalPods within the period", cfg: `{shutdownGracePeriod: 30s, shutdownGracePeriodCriticalPods: 10s}`},
	{name: "shutdownGracePeriodCriticalPods equal to the period", cfg: `{shutdownGracePeriod: 30s, shutdownGracePeriodCriticalPods: 30s}`},
	{name: "shutdownGracePeriodCriticalPods above the period", cfg: `{shutdownGracePeriod: 30s, shutdownGracePeriodCriticalPods: 31s}`, want: []string{"shutdownGracePeriodCriticalPods"}},
	{name: "shutdownGracePeriodCriticalPods 500ms", cfg: `{shutdownGracePeriod: 30s, shutdownGracePeriodCriticalPods: 500ms}`, want: []string{"shutdownGracePeriodCriticalPods"}},
	{name: "shutdownGracePeriod without its gate", cfg: `{shutdownGracePeriod: 30s, featureGates: {GracefulNodeShutdown: false, GracefulNodeShutdownBasedOnPodPriority: false, WindowsGracefulNodeShutdown: false}}`, want: []string{"shutdownGracePeriod"}},
	{name: "shutdownGracePeriod 0s without its gate", cfg: `{shutdownGracePeriod: 0s, featureGates: {GracefulNodeShutdown: false, GracefulNodeShutdownBasedOnPodPriority: false, WindowsGracefulNodeShutdown: false}}`},
	{name: "shutdownGracePeriodByPodPriority alone", cfg: `{shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 10}]}`},
	{name: "shutdownGracePeriodByPodPriority without its gate", cfg: `{shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 10}], featureGates: {GracefulNodeShutdownBasedOnPodPriority: false}}`, want: []string{"shutdownGracePeriodByPodPriority"}},
	{name: "shutdownGracePeriodByPodPriority and shutdownGracePeriod without its gate", cfg: `{shutdownGracePeriod: 10s, shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 10}]}`, flags: []string{"GracefulNodeShutdownBasedOnPodPriority=false"}, want: []string{"shutdownGracePeriodByPodPriority"}},
	{name: "shutdownGracePeriodByPodPriority empty without its gate", cfg: `{shutdownGracePeriodByPodPriority: [], featureGates: {GracefulNodeShutdownBasedOnPodPriority: false}}`},
	{name: "shutdownGracePeriodByPodPriority with shutdownGracePeriod", cfg: `{shutdownGracePeriod: 30s, shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 10}]}`, want: []string{"shutdownGracePeriodByPodPriority"}},

	{name: "maxContainerRestartPeriod 1s", cfg: `{crashLoopBackOff: {maxContainerRestartPeriod: 1s}}`},
	{name: "maxContainerRestartPeriod 300s", cfg: `{crashLoopBackOff: {maxContainerRestartPeriod: 300s}}`},
	{name: "maxContainerRestartPeriod 300.000999s is 300000 ms", cfg: `{crashLoopBackOff: {maxContainerRestartPeriod: 300000999us}}`},
	{name: "maxContainerRestartPeriod 999ms", cfg: `{crashLoopBackOff: {maxContainerRestartPeriod: 999ms}}`, want: []string{"crashLoopBackOff.maxContainerRestartPeriod"}},
	{name: "maxContainerRestartPeriod 301s", cfg: `{crashLoopBackOff: {maxContainerRestartPeriod: 301s}}`, want: []string{"crashLoopBackOff.maxContainerRestartPeriod"}},
	{name: "maxContainerRestartPeriod 0s", cfg: `{crashLoopBackOff: {maxContainerRestartPeriod: 0s}}`, want: []string{"crashLoopBackOff.maxContainerRestartPeriod"}},
	{name: "maxContainerRestartPeriod without its gate", cfg: `{crashLoopBackOff: {maxContainerRestartPeriod: 10s}, featureGates: {KubeletCrashLoopBackOffMax: false}}`, want: []string{"crashLoopBackOff.maxContainerRestartPeriod"}},

	{name: "memoryThrottlingFactor 0", cfg: `{memoryThrottlingFactor: 0}`, want: []string{"memoryThrottlingFactor"}},
	{name: "memoryThrottlingFactor negative", cfg: `{memoryThrottlingFactor: -0.1}`, want: []string{"memoryThrottlingFactor"}},
	{name: "memoryThrottlingFactor 1.01", cfg: `{memoryThrottlingFactor: 1.01}`, want: []string{"memoryThrottlingFactor"}},
	{name: "memoryThrottlingFactor 1", cfg: `{memoryThrottlingFactor: 1}`},
	{name: "memoryThrottlingFactor 0.5", cfg: `{memoryThrottlingFactor: 0.5}`},
	{name: "memoryThrottlingFactor 0.9 without MemoryQoS", cfg: `{memoryThrottlingFactor: 0.9, featureGates: {MemoryQoS: false}}`},
	{name: "memoryThrottlingFactor 0.5 without MemoryQoS", cfg: `{memoryThrottlingFactor: 0.5, featureGates: {MemoryQoS: false}}`, want: []string{"memoryThrottlingFactor"}},

	{name: "logging.flushFrequency negative", cfg: `{logging: {flushFrequency: -1s}}`, want: []string{"logging.flushFrequency"}},
	{name: "logging.flushFrequency 0 is the default", cfg: `{logging: {flushFrequency: 0}}`},
	{name: "logging.flushFrequency 1s", cfg: `{logging: {flushFrequency: 1s}}`},
	{name: "logging.verbosity 2147483647", cfg: `{logging: {verbosity: 2147483647}}`},
	{name: "logging.verbosity 2147483648", cfg: `{logging: {verbosity: 2147483648}}`, want: []string{"logging.verbosity"}},
	{name: "logging.vmodule verbosity 2147483648", cfg: `{logging: {vmodule: [{filePattern: a.go, verbosity: 4}, {filePattern: b.go, verbosity: 2147483648}]}}`, want: []string{"logging.vmodule[1].verbosity"}},
	{name: "tracing.samplingRatePerMillion edges", cfg: `{tracing: {samplingRatePerMillion: 1000000}}`},
	{name: "tracing.samplingRatePerMillion 0", cfg: `{tracing: {samplingRatePerMillion: 0}}`},
	{name: "tracing.samplingRatePerMillion 1000001", cfg: `{tracing: {samplingRatePerMillion: 1000001}}`, want: []string{"tracing.samplingRatePerMillion"}},
	{name: "tracing.samplingRatePerMillion -1", cfg: `{tracing: {samplingRatePerMillion: -1}}`, want: []string{"tracing.samplingRatePerMillion"}},
	{name: "reservedMemory zero", cfg: `{reservedMemory: [{numaNode: 0, limits: {memory: 0}}]}`, want: []string{"reservedMemory[0].limits[memory]"}},
	{name: "reservedMemory 1Gi", cfg: `{reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]}`},
	{name: "reservedMemory twice on a NUMA node", cfg: `{reservedMemory: [{numaNode: 0, limits: {memory: 1Gi, hugepages-2Mi: 2Mi}}, {numaNode: 1, limits: {memory: 1Gi}}, {numaNode: 0, limits: {memory: 2Gi}}]}`, want: []string{"reservedMemory[2].limits[memory]"}},
	{name: "reservedMemory each resource once per NUMA node", cfg: `{reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}, {numaNode: 0, limits: {hugepages-1Gi: 1Gi}}, {numaNode: 1, limits: {memory: 1Gi}}]}`},

	// kubeadm applies the configuration as a JSON merge patch: a null
	// member removes the field, which then has the kubelet's default.
	{name: "a null gate is the gate's default", cfg: `{featureGates: {MemoryQoS: null}, memoryThrottlingFactor: 0.5}`},
	{name: "a null gate beside one turned off", cfg: `{featureGates: {MemoryQoS: false, CustomCPUCFSQuotaPeriod: null}, memoryThrottlingFactor: 0.5, cpuCFSQuotaPeriod: 50ms}`, want: []string{"memoryThrottlingFactor"}},
	{name: "null fields are the defaults", cfg: `{maxPods: null, imageGCHighThresholdPercent: null, imageGCLowThresholdPercent: 84, shutdownGracePeriod: null, logging: {flushFrequency: null}}`},
	{name: "a null reservedMemory limit is no limit", cfg: `{reservedMemory: [{numaNode: 0, limits: {memory: null, hugepages-2Mi: 0}}]}`, want: []string{"reservedMemory[0].limits[hugepages-2Mi]"}},

	{name: "several at once", cfg: `{maxPods: -1, healthzPort: 70000, oomScoreAdj: 5000, containerLogMaxFiles: 1, cpuCFSQuotaPeriod: 2s, eventBurst: -1, registryPullQPS: -1, kubeAPIQPS: -1}`,
		want: []string{"containerLogMaxFiles", "cpuCFSQuotaPeriod", "eventBurst", "healthzPort", "kubeAPIQPS", "maxPods", "oomScoreAdj", "registryPullQPS"}},
	{name: "typical settings", cfg: `{failCgroupV1: false, maxPods: 50, shutdownGracePeriod: 30s, shutdownGracePeriodCriticalPods: 10s, imageGCHighThresholdPercent: 90, imageGCLowThresholdPercent: 70}`},
}

// kubeletUserNamespaceCases hold the Linux-only rule (validation_linux.go).
var kubeletUserNamespaceCases = []kubeletRangeCase{
	{name: "idsPerPod 65536", cfg: `{userNamespaces: {idsPerPod: 65536}}`},
	{name: "idsPerPod 4294901760", cfg: `{userNamespaces: {idsPerPod: 4294901760}}`},
	{name: "idsPerPod 65535", cfg: `{userNamespaces: {idsPerPod: 65535}}`, want: []string{"userNamespaces.idsPerPod"}},
	{name: "idsPerPod 0", cfg: `{userNamespaces: {idsPerPod: 0}}`, want: []string{"userNamespaces.idsPerPod"}},
	{name: "idsPerPod 100000", cfg: `{userNamespaces: {idsPerPod: 100000}}`, want: []string{"userNamespaces.idsPerPod"}},
	{name: "idsPerPod 4294967296", cfg: `{userNamespaces: {idsPerPod: 4294967296}}`, want: []string{"userNamespaces.idsPerPod"}},
}

const kubeletConfigTestPath = "spec.node.kubelet.config"

// kubeletRangeErrors runs machineadm's validation of a case's
// configuration and returns its errors.
func kubeletRangeErrors(t *testing.T, tc kubeletRangeCase) field.ErrorList {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(tc.cfg), &cfg); err != nil {
		t.Fatalf("%s: %v", tc.cfg, err)
	}
	var args []machineadm.Arg
	for _, f := range tc.flags {
		args = append(args, machineadm.Arg{Name: "feature-gates", Value: f})
	}
	var r Result
	validateKubeletConfig(&r, cfg, args, tc.join, field.NewPath("spec", "node", "kubelet", "config"))
	return r.Errors
}

func kubeletTestCases() []kubeletRangeCase {
	cases := slices.Clone(kubeletRangeCases)
	if runtime.GOOS == "linux" {
		cases = append(cases, kubeletUserNamespaceCases...)
	}
	return cases
}

func TestKubeletRanges(t *testing.T) {
	for _, tc := range kubeletTestCases() {
		t.Run(tc.name, func(t *testing.T) {
			errs := kubeletRangeErrors(t, tc)
			var got []string
			for _, e := range errs {
				rel, ok := strings.CutPrefix(e.Field, kubeletConfigTestPath+".")
				if !ok || e.Type != field.ErrorTypeInvalid {
					t.Errorf("error %v: want Invalid below %s", e, kubeletConfigTestPath)
					continue
				}
				if e.Detail == "" || !strings.HasPrefix(e.Detail, "must ") {
					t.Errorf("error %v: want a detail saying what the field must be", e)
				}
				got = append(got, rel)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("%s: refused %q, want %q\n%v", tc.cfg, got, want, errs.ToAggregate())
			}
		})
	}
}

// TestKubeletRangeMessages: the messages give the range, and a cross-field
// message says whether the other side is the kubelet's default.
func TestKubeletRangeMessages(t *testing.T) {
	for _, tc := range []struct {
		cfg, want string
		flags     []string
		join      bool
	}{
		{`{healthzPort: 70000}`, `spec.node.kubelet.config.healthzPort: Invalid value: 70000: must be between 1 and 65535, or 0 to turn the healthz endpoint off`, nil, false},
		{`{imageGCHighThresholdPercent: 150}`, `spec.node.kubelet.config.imageGCHighThresholdPercent: Invalid value: 150: must be between 0 and 100`, nil, false},
		{`{cpuCFSQuotaPeriod: 2s}`, `spec.node.kubelet.config.cpuCFSQuotaPeriod: Invalid value: "2s": must be between 1ms and 1s`, nil, false},
		{`{imageGCLowThresholdPercent: 90}`, `must be less than imageGCHighThresholdPercent (85, the kubelet's default)`, nil, false},
		{`{imageGCLowThresholdPercent: 60, imageGCHighThresholdPercent: 50}`, `must be less than imageGCHighThresholdPercent (50)`, nil, false},
		{`{shutdownGracePeriodCriticalPods: 10s}`, `must not be more than shutdownGracePeriod (0s, the kubelet's default)`, nil, false},
		{`{maxPods: -1}`, `must be 0 or more (0 stands for the kubelet's default, 110)`, nil, false},
		{`{cpuCFSQuotaPeriod: 50ms, featureGates: {CustomCPUCFSQuotaPeriod: false}}`, `while the CustomCPUCFSQuotaPeriod feature gate is off (featureGates)`, nil, false},
		{`{cpuCFSQuotaPeriod: 50ms}`, `while the CustomCPUCFSQuotaPeriod feature gate is off (--feature-gates in extraArgs)`, []string{"CustomCPUCFSQuotaPeriod=false"}, false},
		// A join's base is the cluster's kubelet-config: say how to pin the other side.
		{`{imageGCLowThresholdPercent: 90}`, `imageGCHighThresholdPercent (85, the kubelet's default; a join starts from the cluster's kubelet-config ConfigMap: if that sets imageGCHighThresholdPercent, give the same value here)`, nil, true},
	} {
		errs := kubeletRangeErrors(t, kubeletRangeCase{cfg: tc.cfg, flags: tc.flags, join: tc.join})
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("%s: got %v, want one error with %q", tc.cfg, errs.ToAggregate(), tc.want)
		}
	}
}

// TestKubeletRangesAfterStrictDecoding: a mistyped field is reported as
// such, not also as out of range, and an unknown field does not hide the
// ranges of the known ones.
func TestKubeletRangesAfterStrictDecoding(t *testing.T) {
	errs := kubeletRangeErrors(t, kubeletRangeCase{cfg: `{maxPods: "-1"}`})
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeTypeInvalid {
		t.Errorf("mistyped maxPods: %v", errs.ToAggregate())
	}
	errs = kubeletRangeErrors(t, kubeletRangeCase{cfg: `{maxPod: 5, maxPods: -1}`})
	var paths []string
	for _, e := range errs {
		paths = append(paths, e.Field)
	}
	if !slices.Equal(paths, []string{kubeletConfigTestPath + ".maxPod", kubeletConfigTestPath + ".maxPods"}) {
		t.Errorf("unknown maxPod and maxPods -1: %v", errs.ToAggregate())
	}
	// A null member is left out of the decoding (the merge patch removes
	// the field), but a misspelled one is still reported.
	errs = kubeletRangeErrors(t, kubeletRangeCase{cfg: `{maxPod: null, logging: {formatt: null, format: null}, reservedMemory: [{numaNod: null}], evictionHard: {memory.available: null}, maxPods: -1}`})
	paths = nil
	for _, e := range errs {
		paths = append(paths, e.Field)
	}
	if want := []string{kubeletConfigTestPath + ".logging.formatt", kubeletConfigTestPath + ".maxPod", kubeletConfigTestPath + ".reservedMemory[0].numaNod", kubeletConfigTestPath + ".maxPods"}; !slices.Equal(paths, want) {
		t.Errorf("null members: errors at %q, want %q: %v", paths, want, errs.ToAggregate())
	}
}

func TestKubeletFlagGates(t *testing.T) {
	got := kubeletFlagGates([]machineadm.Arg{
		{Name: "feature-gates", Value: "A=true, B=false,junk,C=maybe"},
		{Name: "v", Value: "2"},
		{Name: "feature-gates", Value: "A=false"},
	})
	if len(got) != 2 || got["A"] || got["B"] {
		t.Errorf("got %v, want A and B off", got)
	}
	if kubeletFlagGates(nil) != nil {
		t.Error("no flags: want no gates")
	}
}

// kubeletUnreadableCases are values the kubelet's decoder refuses: each
// must be reported at its own path (the decoder names none for a
// duration or a quantity it cannot read, and stops at the first problem).
// TestKubeletUnreadableValuesMatchTheKubelet has the kubelet load each.
var kubeletUnreadableCases = []kubeletRangeCase{
	{name: "duration overflow", cfg: `{imageMaximumGCAge: 1h1000000000h}`, want: []string{"imageMaximumGCAge"}},
	{name: "duration with a space", cfg: `{imageMinimumGCAge: "5 min"}`, want: []string{"imageMinimumGCAge"}},
	{name: "three at once", cfg: `{imageMinimumGCAge: "5 min", logging: {flushFrequency: x}, maxPods: many}`, want: []string{"imageMinimumGCAge", "logging.flushFrequency", "maxPods"}},
	{name: "nested duration in days", cfg: `{crashLoopBackOff: {maxContainerRestartPeriod: 1d}}`, want: []string{"crashLoopBackOff.maxContainerRestartPeriod"}},
	{name: "quantity in a list", cfg: `{reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}, {numaNode: 1, limits: {memory: lots}}]}`, want: []string{"reservedMemory[1].limits[memory]"}},
	{name: "number in a map of strings", cfg: `{kubeReserved: {cpu: -1}, evictionHard: {memory.available: 100Mi}}`, want: []string{"kubeReserved[cpu]"}},
	{name: "string in a list element", cfg: `{shutdownGracePeriodByPodPriority: [{priority: 1, shutdownGracePeriodSeconds: 10}, {priority: x}]}`, want: []string{"shutdownGracePeriodByPodPriority[1].priority"}},
}

// TestKubeletUnreadableValues: every value the decoder refuses is an
// error at its own field, with what the field must look like.
func TestKubeletUnreadableValues(t *testing.T) {
	for _, tc := range kubeletUnreadableCases {
		t.Run(tc.name, func(t *testing.T) {
			errs := kubeletRangeErrors(t, tc)
			var got []string
			for _, e := range errs {
				rel, ok := strings.CutPrefix(e.Field, kubeletConfigTestPath+".")
				if !ok || e.Detail == "" {
					t.Errorf("error %v: want one below %s with a message", e, kubeletConfigTestPath)
				}
				got = append(got, rel)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: errors at %q, want %q\n%v", tc.cfg, got, tc.want, errs.ToAggregate())
			}
		})
	}
	for cfg, want := range map[string]string{
		`{imageMaximumGCAge: 1h1000000000h}`:                        `must be a duration such as 30s`,
		`{logging: {flushFrequency: 1y}}`:                           `must be a duration such as 5s or 1m, or a number of nanoseconds`,
		`{reservedMemory: [{numaNode: 0, limits: {memory: lots}}]}`: `must be a quantity such as 100Mi`,
		`{logging: {options: {json: {infoBufferSize: {a: 1}}}}}`:    `must be a quantity such as 100Mi`,
	} {
		errs := kubeletRangeErrors(t, kubeletRangeCase{cfg: cfg})
		if len(errs) != 1 || !strings.Contains(errs[0].Detail, want) {
			t.Errorf("%s: %v, want one error with %q", cfg, errs.ToAggregate(), want)
		}
	}
}

// kubeletFlagGateValues are --feature-gates values for the kubelet's
// extraArgs, and whether the kubelet's flag parser reads them.
// TestKubeletFlagGateFormatMatchesTheKubelet runs its parser on each.
var kubeletFlagGateValues = []struct {
	value string
	ok    bool
}{
	{"MemoryQoS=false", true},
	{"MemoryQoS=false,CustomCPUCFSQuotaPeriod=true", true},
	{" MemoryQoS = false , Other=1", true},
	{"MemoryQoS=FALSE,B=t,C=F,D=0", true},
	{"", true},
	{",MemoryQoS=false,,", true},
	{"MemoryQoS", false},
	{"MemoryQoS=no", false},
	{"MemoryQoS=", false},
	{"MemoryQoS=false=true", false},
	{"MemoryQoS=false, ", false},
	{"MemoryQoS=false;Other=true", false},
}

// TestKubeletFlagGateFormat: a --feature-gates value the kubelet cannot
// parse is an error at its extraArgs entry, naming the bad part.
func TestKubeletFlagGateFormat(t *testing.T) {
	p := field.NewPath("spec", "node", "kubelet", "extraArgs")
	for _, tc := range kubeletFlagGateValues {
		var r Result
		validateKubeletFlagGates(&r, []machineadm.Arg{{Name: "v", Value: "2"}, {Name: "feature-gates", Value: tc.value}}, p)
		if tc.ok {
			if len(r.Errors) > 0 {
				t.Errorf("--feature-gates=%q: %v, want no error", tc.value, r.Errors.ToAggregate())
			}
			continue
		}
		if len(r.Errors) != 1 || r.Errors[0].Field != "spec.node.kubelet.extraArgs[1].value" || !strings.Contains(r.Errors[0].Detail, "Name=true or Name=false") {
			t.Errorf("--feature-gates=%q: %v, want one error at spec.node.kubelet.extraArgs[1].value", tc.value, r.Errors.ToAggregate())
		}
	}
	var r Result
	validateKubeletFlagGates(&r, []machineadm.Arg{{Name: "feature-gates", Value: strings.Repeat("x", 1<<20)}}, p)
	if len(r.Errors) != 1 || len(r.Errors[0].Error()) > 400 {
		t.Errorf("a 1 MiB entry: want one error of at most 400 bytes, got %d errors, the first %.200q", len(r.Errors), r.Errors.ToAggregate())
	}
}
