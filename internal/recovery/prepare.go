package recovery

import (
	"context"
	"time"

	"github.com/tidwall/gjson"
)

// Preparing a message's granules ahead of its write (nothing that reads or
// depends on the database).

// Prepared is a message's granules built ahead of its writes (Prepare).
type Prepared struct {
	now      time.Time
	mc       *messageContext // nil: nothing was built ahead
	granules []builtGranule
	// described is DescribeExecution's answer, read into mc.
	described described
}

// builtGranule is buildGranule's result, and the schema check's.
type builtGranule struct {
	rec  []kv
	gw   *GranuleWrite
	err  error
	verr *SchemaValidationError // validateGranule(rec), when err is nil
}

// built is the i-th granule built ahead, or nil.
func (p *Prepared) built(i int) *builtGranule {
	if p == nil || i >= len(p.granules) {
		return nil
	}
	return &p.granules[i]
}

// Prepare does ahead of WriteMsg what does not read the database: the
// clock, the execution's processing times (DescribeExecution), and each
// granule's row, files and schema check (with the CMR files and file sizes
// read from S3), which WriteMsg then takes in place of doing them between
// its lookups and writes: their errors and warnings too, met where they
// were met before. The reads are idempotent, so reading them early changes
// no result; a message that fails before its granules has read them for
// nothing. It builds nothing when the message would fail before its
// granules; WriteMsg then builds them itself.
func (w *Writer) Prepare(ctx context.Context, msg Msg) *Prepared {
	p := &Prepared{now: w.now()}
	granules := msg.Get("payload.granules")
	if !granules.IsArray() {
		return p
	}
	start, err := workflowStartTime(msg)
	if err != nil {
		return p
	}
	arn := executionArn(msg)
	mc := w.messageContext(msg, arn, p.now)
	mc.startMs = start
	if w.SFN != nil && arn != "" && granules.Get("#").Int() > 0 {
		p.described = w.describe(ctx, arn, mc, p.now)
	}
	granules.ForEach(func(_, g gjson.Result) bool {
		var b builtGranule
		b.rec, b.gw, b.err = buildGranule(ctx, g, mc, w.Objects)
		if b.err == nil {
			b.verr = validateGranule(b.rec)
		}
		p.granules = append(p.granules, b)
		return true
	})
	p.mc = mc
	return p
}
