package pushexport

import (
	"context"

	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/dlqsession"
)

// DeleteHeld deletes every message the hold still holds (Extra ones were
// never written to the file and are not deleted), 100 at a time. want is
// how many the caller wrote and expects deleted: those whose hold was lost
// meanwhile (a renewal of their visibility was refused, or the run was
// paused past it: another consumer may have them) cannot be deleted by
// this run, and count in lost (not in failed) unless ctx ended. each,
// when set, is told every message as its delete is known (err nil: deleted).
func DeleteHeld(ctx context.Context, hold *sqsmove.Hold, want int, each func(m *sqsmove.Message, err error)) (deleted, failed, lost int) {
	hold.EachBatch(100, false, func(refs []sqsmove.Ref) {
		if ctx.Err() != nil {
			return
		}
		bad := hold.Delete(ctx, refs)
		failed += len(bad)
		deleted += len(refs) - len(bad)
		if each != nil {
			for _, r := range refs {
				each(r.Msg, bad[r.Ord])
			}
		}
	})
	if l := want - deleted - failed; l > 0 && ctx.Err() == nil {
		lost = l
	}
	return deleted, failed, lost
}

// InFlightElsewhere is the DLQ's in-flight count that is not this run's,
// after its scan: a line of the file among them was not seen by the scan.
func InFlightElsewhere(ctx context.Context, s *dlqsession.Session) (int, error) {
	q, err := sqsmove.Describe(ctx, s.API, s.Queue.URL)
	if err != nil {
		return 0, err
	}
	ours := s.Hold.InState(sqsmove.Held) + s.Hold.InState(sqsmove.Extra)
	return max(0, int(q.InFlight)-ours), nil
}
