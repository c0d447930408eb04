package nodeannotation

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/report"
)

// TestUpgradeOutcomeJoinsTheBootstrapAnnotation writes a failed upgrade's
// report to a Node that carries its bootstrap's annotation: the patch
// keeps the bootstrap's outcome and adds the upgrade's, failure included
// (a bootstrap's failure is never written; an upgrade's is).
func TestUpgradeOutcomeJoinsTheBootstrapAnnotation(t *testing.T) {
	boot, err := Value(succeeded())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var patches [][]byte
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPatch {
			mu.Lock()
			patches = append(patches, body)
			mu.Unlock()
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": "Node", "apiVersion": "v1", "metadata": map[string]any{"name": "w1", "annotations": map[string]string{Annotation: boot}}})
	}))
	t.Cleanup(srv.Close)
	root := t.TempDir()
	kubeconfig(t, root, srv)
	r := succeeded()
	r.Command, r.Result = "upgrade", report.ResultFailed
	r.FailedPhase, r.ErrorClass, r.Hint = "drain", errclass.DrainFailed, "check the PodDisruptionBudgets"
	r.Upgrade = &report.Upgrade{FromVersion: "v1.36.3", ToVersion: "v1.37.2"}
	if err := (&Writer{Root: root}).Write(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if len(patches) != 1 {
		t.Fatalf("%d patches", len(patches))
	}
	var p struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patches[0], &p); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Result  string `json:"result"`
		Command string `json:"command"`
		Upgrade struct {
			Result, FromVersion, ToVersion, FailedPhase, ErrorClass string
		} `json:"upgrade"`
	}
	if err := json.Unmarshal([]byte(p.Metadata.Annotations[Annotation]), &v); err != nil {
		t.Fatal(err)
	}
	if v.Result != "Succeeded" || v.Command != "bootstrap" {
		t.Errorf("the bootstrap's outcome was not kept: %+v", v)
	}
	u := v.Upgrade
	if u.Result != "Failed" || u.FromVersion != "v1.36.3" || u.ToVersion != "v1.37.2" || u.FailedPhase != "drain" || u.ErrorClass != "DrainFailed" {
		t.Errorf("upgrade outcome %+v", u)
	}
}
