package render

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_1"
	"github.com/coreos/ignition/v2/config/v3_2"
	"github.com/coreos/ignition/v2/config/v3_3"
	"github.com/coreos/ignition/v2/config/v3_4"
	"github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/vcontext/report"
)

// DefaultIgnitionVersion is the Ignition config spec version rendered when
// none is asked for: 3.4.0 is read by the Ignition releases of current
// Fedora CoreOS and Flatcar.
const DefaultIgnitionVersion = "3.4.0"

// ignitionParsers maps each supported spec version to its parser in
// github.com/coreos/ignition/v2, which decodes the config strictly into that
// version's types and validates it. 3.0.0 lacks the compression field and
// sha256 hashes the renderer needs; 2.x (legacy Flatcar) is not rendered.
var ignitionParsers = map[string]func([]byte) (report.Report, error){
	"3.1.0": func(b []byte) (report.Report, error) { _, r, err := v3_1.Parse(b); return r, err },
	"3.2.0": func(b []byte) (report.Report, error) { _, r, err := v3_2.Parse(b); return r, err },
	"3.3.0": func(b []byte) (report.Report, error) { _, r, err := v3_3.Parse(b); return r, err },
	"3.4.0": func(b []byte) (report.Report, error) { _, r, err := v3_4.Parse(b); return r, err },
	"3.5.0": func(b []byte) (report.Report, error) { _, r, err := v3_5.Parse(b); return r, err },
}

// IgnitionVersions lists the supported Ignition spec versions, oldest first.
func IgnitionVersions() []string {
	v := make([]string, 0, len(ignitionParsers))
	for k := range ignitionParsers {
		v = append(v, k)
	}
	slices.Sort(v)
	return v
}

// ignitionVersion normalises "3.4" to "3.4.0" and checks it is supported;
// "" gives DefaultIgnitionVersion.
func ignitionVersion(v string) (string, error) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	switch {
	case v == "":
		return DefaultIgnitionVersion, nil
	case strings.Count(v, ".") == 1:
		v += ".0"
	}
	if _, ok := ignitionParsers[v]; !ok {
		return "", optErr("--ignition-version", "%q is not supported; one of %s", v, strings.Join(IgnitionVersions(), ", "))
	}
	return v, nil
}

// validateIgnition parses raw with the Ignition library for version and
// fails on any error or warning it reports.
func validateIgnition(raw []byte, version string) error {
	parse, ok := ignitionParsers[version]
	if !ok {
		return fmt.Errorf("ignition spec %s has no parser", version)
	}
	rpt, err := parse(raw)
	if err == nil && len(rpt.Entries) > 0 {
		err = errors.New("unexpected report entries")
	}
	if err != nil {
		return fmt.Errorf("generated Ignition %s config does not validate: %w: %s", version, err, rpt.String())
	}
	return nil
}
