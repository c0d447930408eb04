//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// benchControlPlaneComponents are the containers whose restarts an
// upgrade's timeline shows.
var benchControlPlaneComponents = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// criContainer is what the timeline reads of `crictl inspect`.
type criContainer struct {
	Status struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		State      string `json:"state"`
		CreatedAt  string `json:"createdAt"`
		StartedAt  string `json:"startedAt"`
		FinishedAt string `json:"finishedAt"`
	} `json:"status"`
}

// benchTimeline says where a control plane's unavailability went: each
// control-plane container's start and end from the runtime (crictl
// inspect), relative to start, in one line for the log; the kubelet's
// journal lines about them since start go to bench-upgrade-timeline.log
// in the machine's directory beside the absolute stretches. A diagnostic:
// its errors are only logged.
func benchTimeline(ctx context.Context, m *Machine, start time.Time, stretches [][2]time.Time) string {
	crictl := []string{e2eBinDir + "/crictl", "--runtime-endpoint", "unix:///run/containerd/containerd.sock"}
	ids, err := m.Exec(ctx, nil, append(crictl, "ps", "-a", "-q")...)
	if err != nil {
		return "no timeline: " + err.Error()
	}
	rel := func(s string) string {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || t.Year() < 2000 {
			return "-"
		}
		return fmt.Sprintf("%.1fs", t.Sub(start).Seconds())
	}
	var rows []string
	for _, id := range strings.Fields(ids.Stdout) {
		out, err := m.Exec(ctx, nil, append(crictl, "inspect", id)...)
		if err != nil {
			continue
		}
		var c criContainer
		if json.Unmarshal([]byte(out.Stdout), &c) != nil {
			continue
		}
		name := c.Status.Metadata.Name
		if !slices.Contains(benchControlPlaneComponents, name) {
			continue
		}
		t, _ := time.Parse(time.RFC3339Nano, c.Status.StartedAt)
		if !t.IsZero() && t.Before(start.Add(-time.Minute)) && c.Status.State == "CONTAINER_RUNNING" {
			continue // not restarted by this upgrade
		}
		rows = append(rows, fmt.Sprintf("%s started %s ended %s", name, rel(c.Status.StartedAt), rel(c.Status.FinishedAt)))
	}
	// A manifest's change time is when kubeadm moved it into place (a
	// rename), the kubelet's restart of its pod follows.
	if st, err := m.Exec(ctx, nil, "sh", "-c", "stat -c '%z %n' /etc/kubernetes/manifests/*.yaml"); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(st.Stdout), "\n") {
			f := strings.Fields(l)
			if len(f) < 4 {
				continue
			}
			t, err := time.Parse("2006-01-02 15:04:05.999999999 -0700", f[0]+" "+f[1]+" "+f[2])
			if err != nil {
				continue
			}
			rows = append(rows, fmt.Sprintf("%s moved in %.1fs", filepath.Base(f[3]), t.Sub(start).Seconds()))
		}
	}
	sort.Strings(rows)
	var b strings.Builder
	for _, s := range stretches {
		fmt.Fprintf(&b, "unavailable %s .. %s (%.1fs+%.1fs)\n", s[0].Format(time.RFC3339Nano), s[1].Format(time.RFC3339Nano), s[0].Sub(start).Seconds(), s[1].Sub(s[0]).Seconds())
	}
	b.WriteString(strings.Join(rows, "\n") + "\n")
	if j, err := m.Exec(ctx, nil, "journalctl", "-u", "kubelet", "-o", "short-iso-precise", "--no-pager", "--since", "@"+fmt.Sprint(start.Unix())); err == nil {
		n := 0
		for _, l := range strings.Split(j.Stdout, "\n") {
			// The kubelet's view of each restart, relative to start, in the
			// returned line too: when it replaced a mirror pod and when it
			// saw the pod start.
			for _, e := range []struct{ logged, says string }{
				{"Deleted mirror pod", "replaced mirror of"},
				{"Observed pod startup duration", "saw start of"},
			} {
				if !strings.Contains(l, e.logged) {
					continue
				}
				if t, err := time.Parse("2006-01-02T15:04:05.999999-0700", strings.Fields(l)[0]); err == nil {
					_, pod, _ := strings.Cut(l, "pod=\"kube-system/")
					pod, _, _ = strings.Cut(pod, "\"")
					rows = append(rows, fmt.Sprintf("kubelet %s %s %.1fs", e.says, pod, t.Sub(start).Seconds()))
				}
			}
			for _, c := range benchControlPlaneComponents {
				if strings.Contains(l, c) && n < 400 {
					b.WriteString(l + "\n")
					n++
					break
				}
			}
		}
	}
	_ = os.WriteFile(filepath.Join(m.Dir, "bench-upgrade-timeline.log"), []byte(b.String()), 0o600)
	return strings.Join(rows, "; ")
}
