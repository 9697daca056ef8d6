package pushdlqcmd

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/cli/output"
)

// depthLine is one --watch line: the time, then each queue's depths.
func depthLine(now time.Time, qs []QueueDepth) string {
	parts := []string{now.UTC().Format("15:04:05Z")}
	for _, q := range qs {
		if q.Error != nil {
			parts = append(parts, fmt.Sprintf("%s ?", output.Escape(q.Name)))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d (%d in flight, %d delayed)", output.Escape(q.Name), q.Visible, q.InFlight, q.Delayed))
	}
	return strings.Join(parts, "  ")
}

// printProcessorStatus is processor status's table.
func printProcessorStatus(w io.Writer, st ProcessorStatus) error {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("function   %s (revision %s, last update %s)\n", output.Escape(st.ARN), output.Escape(st.Revision), output.Escape(st.LastUpdateStatus))
	switch {
	case st.SettingsError != nil:
		p("settings   not usable: %s\n", output.Escape(*st.SettingsError))
	default:
		p("window     %s … %s (inclusive, on createdAt)\n", *st.WindowStart, *st.WindowEnd)
		if st.AllCodes {
			p("codes      * (every code)\n")
		} else {
			names := make([]string, len(st.Codes))
			for i, c := range st.Codes {
				names[i] = fmt.Sprintf("%d %s", c.Code, c.Name)
			}
			p("codes      %s\n", strings.Join(names, ", "))
		}
	}
	if len(st.Mappings) == 0 {
		p("mapping    none: the function has no event source mapping\n")
	}
	for _, m := range st.Mappings {
		conc := "not set"
		if m.MaxConcurrency != nil {
			conc = fmt.Sprint(*m.MaxConcurrency)
		}
		p("mapping    %s %s, batch size %d, maximum concurrency %s, from %s\n", m.UUID, m.State, m.BatchSize, conc, output.Escape(m.EventSourceARN))
	}
	for i, q := range st.Queues {
		label := "queues    "
		if i > 0 {
			label = "          "
		}
		if q.Error != nil {
			p("%s %s %s: %s\n", label, q.Role, output.Escape(q.Name), output.Escape(*q.Error))
			continue
		}
		p("%s %s %s: %d visible, %d in flight, %d delayed\n", label, q.Role, output.Escape(q.Name), q.Visible, q.InFlight, q.Delayed)
	}
	_, err := w.Write(b.Bytes())
	return err
}
