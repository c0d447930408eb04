package report

import (
	"context"
	"io"
)

// SummaryWriter writes the human summary (Summary) of the report to Out,
// usually standard output.
type SummaryWriter struct {
	// Out receives the summary.
	Out io.Writer
	// Options shape the summary. Default OneScreen("").
	Options SummaryOptions
	// WriterName names the writer in errors. Default "stdout".
	WriterName string
}

// Name is WriterName, default "stdout".
func (w *SummaryWriter) Name() string {
	if w.WriterName != "" {
		return w.WriterName
	}
	return "stdout"
}

// Write writes the summary of r.
func (w *SummaryWriter) Write(ctx context.Context, r *BootstrapReport) error {
	opt := w.Options
	if opt.Width == 0 && opt.Height == 0 {
		opt = OneScreen(opt.ReportPath)
	}
	_, err := io.WriteString(w.Out, Summary(r, opt))
	return err
}
