package phases

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/upgrade"
	"github.com/machineadm/machineadm/pkg/version"
)

// RecordBootstrap records d.Config as the applied spec after a successful
// bootstrap (RecordApplied), except after a bootstrap that found this
// spec's run finished (a rerun at boot) on a node an upgrade has since
// brought to another spec: that record stays, since the node runs the
// upgrade's spec, not the bootstrap's.
func RecordBootstrap(d *Data) (bool, error) {
	if d.finishedEarlier {
		// A record others may have written is kept too (it is not trusted
		// for a plan, but the bootstrap's spec is surely not the node's).
		if r, err := upgrade.ReadRecordAnyOwner(d.WorkDir); err == nil && r.Command != "bootstrap" {
			d.log().Debug("applied-spec record kept: an upgrade wrote it after this bootstrap", "record", r.SpecDigest)
			return false, nil
		}
	}
	return RecordApplied(d, "", d.SpecDigest, "bootstrap")
}

// RecordApplied writes d.Config as the node's applied spec
// (upgrade.Record) into d.WorkDir, with key (hex; "" keeps the key of the
// record there, or makes one), the spec file's digest and the command
// that applied it. It reports whether the record changed: a record of the
// same spec and digest is kept as it is. Not in a dry run (false, nil).
func RecordApplied(d *Data, key, specDigest, command string) (bool, error) {
	if d.DryRun {
		return false, nil
	}
	old, err := upgrade.ReadRecord(d.WorkDir)
	if err != nil && !errors.Is(err, upgrade.ErrNoRecord) {
		d.log().Warn("the applied-spec record cannot be read; writing a new one", "error", err)
		old = nil
	}
	if key == "" && old != nil {
		key = old.Key
	}
	if key == "" {
		if key, err = upgrade.NewKey(); err != nil {
			return false, errclass.New(errclass.Internal, "", err)
		}
	}
	r, err := upgrade.NewRecord(d.Config, specDigest, command, version.Version, key, time.Now())
	if err != nil {
		return false, errclass.New(errclass.Internal, "", err)
	}
	if old != nil && old.Key == key && old.SpecDigest == specDigest && sameJSON(old.Spec, r.Spec) {
		return false, nil
	}
	if err := r.Write(d.WorkDir); err != nil {
		return false, errclass.New(errclass.HostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
	}
	return true, nil
}

// sameJSON says whether a and b are the same JSON text but for
// insignificant white space (a record's spec is written indented).
func sameJSON(a, b []byte) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}
