package report

import (
	"fmt"

	"github.com/machineadm/machineadm/pkg/readlimit"
)

// MaxReportSize bounds a report file that is read back: 4 MiB. A report
// holds at most DefaultTailLines log lines of at most MaxTailLineLen bytes
// besides its phases, far below this; /dev/zero or a runaway file is
// refused at once.
const MaxReportSize = 4 << 20

// ReadFile reads and decodes (Decode) the report at path, which must be a
// regular file of at most MaxReportSize bytes: a FIFO, a device or a
// directory is refused without blocking and without being read. Errors
// name what is wrong but never quote more than a short part of the file.
func ReadFile(path string) (*BootstrapReport, error) {
	data, err := readlimit.File(path, MaxReportSize)
	if err != nil {
		return nil, fmt.Errorf("reading the outcome report: %w", err)
	}
	return Decode(data)
}
