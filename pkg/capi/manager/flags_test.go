package manager

import (
	"bytes"
	"strings"
	"testing"
)

// Bad report receiver flags exit 2 with the flag named, before anything
// connects anywhere.
func TestReportFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--report-bind-address=127.0.0.1:9445"}, "set both or neither"},
		{[]string{"--report-url=http://10.0.0.1:9445"}, "set both or neither"},
		{[]string{"--report-bind-address=:9445", "--report-url=ftp://x"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://u:p@x"}, "--report-url"},
		{[]string{"--report-bind-address=:9445", "--report-url=http://x/?token=1"}, "--report-url"},
	} {
		var stderr bytes.Buffer
		if code := Main(c.args, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
