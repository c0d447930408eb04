package controller

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The gateway client reads etcd's JSON answers as protobuf encodes them
// (64-bit integers as strings, or numbers from older gateways), sends a
// member ID as a decimal string, and reports a refused call with etcd's
// own message. The real exchange is TestDirectEtcdDialerRealCluster's.
func TestEtcdGatewayAnswers(t *testing.T) {
	var removed string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v3/cluster/member/list":
			_, _ = io.WriteString(w, `{"header":{"cluster_id":"1"},"members":[`+
				`{"ID":"13668033151171901709","name":"a","clientURLs":["`+"http://"+r.Host+`"]},`+
				`{"ID":42,"name":"b","clientURLs":["http://127.0.0.1:1"]},`+
				`{"ID":"7"}]}`)
		case "/v3/maintenance/status":
			_, _ = io.WriteString(w, `{"leader":"13668033151171901709","errors":[]}`)
		case "/v3/cluster/member/remove":
			removed = string(body)
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"code":5,"message":"etcdserver: member not found"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	d := &directEtcd{urls: []string{srv.URL}, hc: srv.Client()}
	ms, err := d.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[0].ID != 13668033151171901709 || !ms[0].Healthy || ms[1].ID != 42 || ms[1].Healthy || ms[2].ID != 7 || ms[2].Healthy {
		t.Fatalf("members %+v: want a (healthy), b (42, unreachable), 7 (never started)", ms)
	}
	err = d.RemoveMember(context.Background(), 13668033151171901709)
	if removed != `{"ID":"13668033151171901709"}` {
		t.Errorf("remove request %s", removed)
	}
	if err == nil || !strings.Contains(err.Error(), "member not found") {
		t.Errorf("remove refused by etcd: error %v, want etcd's message", err)
	}
	if statusHealthy(&statusResponse{Leader: 1, Errors: []string{"memberID:1  alarm:NOSPACE"}}) || statusHealthy(&statusResponse{}) {
		t.Error("a member with an alarm or without a leader counted healthy")
	}
}
