package report

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaPath is the committed JSON Schema of the report, generated from
// the Go types by hack/gen-schema (make schema).
const schemaPath = "../../docs/schema/bootstrapreport.v1alpha1.json"

// TestReportsMatchSchema validates reports the recorder writes against the
// committed schema with a validator that is not the generator.
func TestReportsMatchSchema(t *testing.T) {
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(schemaPath, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}

	ok := &memWriter{name: "ok"}
	rec := NewRecorder(testMeta(), []Writer{ok}, nil, nil)
	rec.PhaseStarted("preflight")
	rec.PhaseFinished("preflight", PhaseSucceeded, "")
	rec.Finish(t.Context())
	bad := &memWriter{name: "bad"}
	rec = NewRecorder(Meta{Command: "bootstrap"}, []Writer{bad}, nil, nil)
	rec.AppendOutput("some output")
	rec.Fail("", errors.New("invalid machine spec"))
	rec.Finish(t.Context())

	// A join that registered its Node and then failed in a phase after
	// the sysctl phase recorded its values and a warning.
	joinW := &memWriter{name: "join"}
	rec = NewRecorder(testMeta(), []Writer{joinW}, nil, nil)
	rec.PhaseStarted("sysctl")
	rec.PhaseDetails("sysctl", []SysctlValue{{Key: "net.ipv4.ip_forward", Desired: "1", Effective: "1", BootValue: "0", BootFile: "/etc/sysctl.d/99-admin.conf"}, {Key: "net.ipv4.route.flush", Desired: "1", ReadError: "permission denied"}}, []string{"a later file sets another value"})
	rec.PhaseFinished("sysctl", PhaseSucceeded, "")
	rec.PhaseStarted("kubelet-wait-bootstrap")
	rec.PhaseFinished("kubelet-wait-bootstrap", PhaseSucceeded, "")
	rec.NodeRegistered()
	rec.PhaseStarted("static-pods")
	rec.Fail("static-pods", errors.New("boom"))
	rec.Finish(t.Context())
	joined := joinW.only(t)
	if joined.NodeRegistered == "" || len(joined.Phases[0].Sysctl) != 2 || len(joined.Phases[0].Warnings) != 1 {
		t.Fatalf("the join's report lacks the new fields: %+v", joined)
	}

	for name, r := range map[string]*BootstrapReport{"success": ok.only(t), "failure": bad.only(t), "fixture": fixtureFailed(), "join-registered": joined} {
		data, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Errorf("%s report does not match %s: %v\n%s", name, schemaPath, err, data)
		}
	}
	// The schema is strict: a wrong class or an unknown field is refused.
	for _, data := range []string{
		`{"apiVersion":"machineadm.io/v1alpha1","kind":"BootstrapReport","machine":{"hostname":"h","machineadmVersion":"v"},"command":"bootstrap","startTime":"2026-01-01T00:00:00Z","endTime":"2026-01-01T00:00:00Z","result":"Failed","phases":[],"errorClass":"Bogus"}`,
		`{"apiVersion":"machineadm.io/v1alpha1","kind":"BootstrapReport","machine":{"hostname":"h","machineadmVersion":"v"},"command":"bootstrap","startTime":"2026-01-01T00:00:00Z","endTime":"2026-01-01T00:00:00Z","result":"Succeeded","phases":[],"extra":1}`,
		`{"apiVersion":"machineadm.io/v1alpha1","kind":"BootstrapReport","machine":{"hostname":"h","machineadmVersion":"v"},"command":"bootstrap","startTime":"2026-01-01T00:00:00Z","endTime":"2026-01-01T00:00:00Z","result":"Succeeded","phases":[{"name":"sysctl","status":"Succeeded","startTime":"2026-01-01T00:00:00Z","durationMs":0,"sysctl":[{"desired":"1"}]}]}`,
	} {
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(data)))
		if schema.Validate(inst) == nil {
			t.Errorf("schema accepts %s", data)
		}
	}
}
