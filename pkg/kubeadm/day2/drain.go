package day2

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubectl/pkg/drain"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// maxKubeconfigSize bounds a kubeconfig file Client reads (16 MiB).
const maxKubeconfigSize = 16 << 20

// Client returns a clientset for the kubeconfig at path (a host path),
// with user agent "machineadm". A path that names something other than a
// regular file (a FIFO, a device, a directory), or a file larger than
// 16 MiB, is an error, never read: reading a FIFO would block the run
// forever.
func Client(path string) (kubernetes.Interface, error) {
	cfg, err := RESTConfig(path)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// RESTConfig is Client's configuration for the kubeconfig at path (a
// host path), with the same checks. Its error never quotes the file's
// content (loadError).
func RESTConfig(path string) (*rest.Config, error) {
	data, err := readlimit.File(path, maxKubeconfigSize)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cc, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, loadError(err, data))
	}
	// Relative file references resolve against the file's directory, as
	// when clientcmd reads the file itself.
	for _, a := range cc.AuthInfos {
		a.LocationOfOrigin = path
	}
	for _, c := range cc.Clusters {
		c.LocationOfOrigin = path
	}
	if err := clientcmd.ResolveLocalPaths(cc); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*cc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg.UserAgent = "machineadm"
	return cfg, nil
}

// quoted matches a double-quoted (Go syntax), back-quoted or single-quoted
// (no blanks: "couldn't" is no quote) segment of an error message.
var quoted = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`|'[^'\\s]*'")
})

// loadError is clientcmd.Load's error err for data, unless it quotes part
// of data: the YAML layer puts a map key or a tagged scalar it cannot
// take into its message (`invalid map key: []interface {}{"…"}`,
// `unsupported map key …, value: …`, "cannot decode !!str `…`"), and
// the file may hold credentials (upgrade --kubeconfig names any file root
// can read). Such an error is replaced by one that quotes nothing. The
// document's own kind and apiVersion may be quoted (`no kind "Secret" is
// registered for version "v1"`), and so may a segment of fewer than 4
// bytes (a JSON syntax error's "invalid character 'x'").
func loadError(err error, data []byte) error {
	msg := err.Error()
	var tm metav1.TypeMeta
	_ = yaml.Unmarshal(data, &tm)
	leaks := yamlQuotes(msg)
	for _, q := range quoted().FindAllString(msg, -1) {
		s := q[1 : len(q)-1]
		if u, err := strconv.Unquote(q); err == nil && q[0] == '"' {
			s = u
		}
		if len(s) >= 4 && s != tm.Kind && s != tm.APIVersion && bytes.Contains(data, []byte(s)) {
			leaks = true
		}
	}
	if !leaks {
		return err
	}
	return quotingYAMLError("a kubeconfig")
}

// yamlQuotes says whether msg, an error of the YAML layer
// (sigs.k8s.io/yaml), has the shape of one that quotes the input: a map
// key or a tagged scalar it cannot take.
func yamlQuotes(msg string) bool {
	return strings.Contains(msg, "map key") || strings.Contains(msg, "cannot decode !!") || strings.Contains(msg, "cannot unmarshal !!")
}

// quotingYAMLError replaces an error of the YAML layer that quotes the
// input (yamlQuotes) of what (a kubeconfig, a kubeadm configuration).
func quotingYAMLError(what string) error {
	return fmt.Errorf("its YAML has a map key or a tagged value %s cannot hold (the loader's message is left out: it quotes the file)", what)
}

// drainHint is the hint of a drain that failed for want of rights.
const drainHint = "the drain's credential (--kubeconfig; default /etc/kubernetes/admin.conf) must be allowed to patch the Node and evict its pods; a worker has no such credential: pass one, or --skip-drain"

// Drainer cordons, drains and uncordons one node through
// k8s.io/kubectl/pkg/drain (kubectl drain's library): pods are evicted
// through the Eviction API, so PodDisruptionBudgets hold; DaemonSet pods
// stay; pods with emptyDir data are evicted (their data goes); pods
// without a controller are evicted too (kubectl's --force), since the
// node is about to restart its kubelet.
type Drainer struct {
	// Client is the cluster.
	Client kubernetes.Interface
	// Out receives the drain's progress lines; nil discards them.
	Out io.Writer
}

// Drain cordons node and evicts its pods, within timeout; it returns
// lines for the report. A failure is class DrainFailed (Timeout when the
// time ran out).
func (d Drainer) Drain(ctx context.Context, node string, timeout time.Duration) ([]string, error) {
	out := d.Out
	if out == nil {
		out = io.Discard
	}
	var evicted []string
	h := &drain.Helper{
		Ctx: ctx, Client: d.Client, Force: true, GracePeriodSeconds: -1,
		IgnoreAllDaemonSets: true, DeleteEmptyDirData: true, Timeout: timeout,
		Out: out, ErrOut: out,
		OnPodDeletionOrEvictionFinished: func(pod *corev1.Pod, usingEviction bool, err error) {
			if err == nil {
				evicted = append(evicted, pod.Namespace+"/"+pod.Name)
			}
		},
	}
	n, err := d.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, errclass.New(errclass.DrainFailed, drainHint, fmt.Errorf("reading Node %s: %w", node, err))
	}
	if err := drain.RunCordonOrUncordon(h, n, true); err != nil {
		return nil, errclass.New(errclass.DrainFailed, drainHint, fmt.Errorf("cordoning Node %s: %w", node, err))
	}
	lines := []string{"cordoned Node " + node}
	if err := drain.RunNodeDrain(h, node); err != nil {
		class := errclass.DrainFailed
		if strings.Contains(err.Error(), "global timeout") || ctx.Err() != nil {
			class = errclass.Timeout
		}
		return lines, errclass.New(class, errclass.DefaultHint(errclass.DrainFailed), fmt.Errorf("draining Node %s (within %s): %w", node, timeout, err))
	}
	lines = append(lines, fmt.Sprintf("evicted %d pod(s) from Node %s through the Eviction API", len(evicted), node))
	return lines, nil
}

// Uncordon makes node schedulable (a no-op when it is).
func (d Drainer) Uncordon(ctx context.Context, node string) error {
	n, err := d.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return errclass.New(errclass.DrainFailed, drainHint, fmt.Errorf("reading Node %s: %w", node, err))
	}
	h := &drain.Helper{Ctx: ctx, Client: d.Client, Out: io.Discard, ErrOut: io.Discard}
	if err := drain.RunCordonOrUncordon(h, n, false); err != nil {
		return errclass.New(errclass.DrainFailed, drainHint, fmt.Errorf("uncordoning Node %s: %w", node, err))
	}
	return nil
}

// WaitNodeVersion waits, at most timeout, until node reports kubelet
// version and is Ready. It reads the Node every NodeVersionPoll and, from
// the first read on, also watches it (a field selector on its name, from
// the read's resourceVersion), so that it returns as soon as the kubelet
// reports instead of at the next read; a watch that fails or ends leaves
// the reads alone, and at most maxNodeWatches are opened. Its error is an
// *errclass.Error of class KubeletFailed naming the last version seen and,
// when the last read of the Node failed, that read's error (a credential
// the API server refuses is not a kubelet that does not report: the hint
// says so when no read worked); when ctx ends first, ctx's error.
func WaitNodeVersion(parent context.Context, c kubernetes.Interface, node, version string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	var last string
	var readErr error // the last read's error, nil after a read that worked
	readOK := false   // a read worked
	done := func(n *corev1.Node) bool {
		last = n.Status.NodeInfo.KubeletVersion
		return last == version && ready(n)
	}
	var w watch.Interface
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	watches := 0
	read := time.NewTimer(0)
	defer read.Stop()
	for {
		var events <-chan watch.Event
		if w != nil {
			events = w.ResultChan()
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				// Cancelled (a signal), not timed out: not the kubelet's fault.
				return parent.Err()
			}
			hint := "The kubelet restarted but does not report the new version: deliver its binary before the upgrade (spec.host.files with a sha256, or the OS's kubelet package), then check `journalctl -u kubelet`."
			err := fmt.Errorf("Node %s did not report kubelet %s and Ready within %s (last seen: %q)", node, version, timeout, last)
			if readErr != nil {
				err = fmt.Errorf("%w; the last read failed: %w", err, readErr)
				if !readOK {
					hint = "machineadm could not read the Node with the kubelet's credential: check /etc/kubernetes/kubelet.conf and the API server, then run machineadm upgrade again."
				}
			}
			return errclass.New(errclass.KubeletFailed, hint, err)
		case e, open := <-events:
			if !open {
				w.Stop()
				w = nil
				continue
			}
			if n, ok := e.Object.(*corev1.Node); ok && n.Name == node && done(n) {
				return nil
			}
		case <-read.C:
			n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if ctx.Err() == nil {
				readErr = err
			}
			readOK = readOK || err == nil
			if err == nil {
				if done(n) {
					return nil
				}
				if w == nil && watches < maxNodeWatches {
					watches++
					nw, err := c.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{
						FieldSelector:   fields.OneTermEqualSelector("metadata.name", node).String(),
						ResourceVersion: n.ResourceVersion,
					})
					if err == nil {
						w = nw
					}
				}
			}
			read.Reset(nodeVersionPoll)
		}
	}
}

// NodeVersionPoll is WaitNodeVersion's period between two reads of the
// Node: four times a second for the few seconds a kubelet takes to report
// after its restart (every 2 s added a second on average to every node's
// upgrade, an eighth of a worker's). The watch beside it wakes the wait
// at once.
const NodeVersionPoll = 250 * time.Millisecond

// nodeVersionPoll is NodeVersionPoll; tests lengthen it to see the watch
// alone wake the wait.
var nodeVersionPoll = NodeVersionPoll

// maxNodeWatches bounds the watches one WaitNodeVersion opens (a watch
// the API server ends is opened again at the next read).
const maxNodeWatches = 10

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
