package dlarecover

import (
	"encoding/json"
	"os"
	"sync/atomic"
	"time"
)

// StageTimesEnv names a file that, when set, receives where a recover run's
// time went, stage by stage, as JSON: for each stage the seconds summed
// over the goroutines in it, and how many times it was entered. A worker's
// time splits into waiting for an object, waiting for its prepared reads,
// writing it and waiting for a tail's place; what a tail, the feeder and
// the emitter wait on is beside it. How the benchmarks find what waits in
// line (docs/performance.md).
const StageTimesEnv = "DEADLETTER_STAGE_TIMES"

// The stages a run's time is clocked in.
const (
	stWorkerWaitItem    = iota // a worker waits for the feeder's next object
	stWorkerWaitPrepare        // a worker waits for the object's reads (Step Functions, replace payloads)
	stWorkerProcess            // a worker writes the object (the database) and decides its tail
	stWorkerWaitTail           // a worker waits for a tail's place (tailsInFlight are running)
	stTail                     // a tail publishes (SNS) and deletes or moves the object
	stTailWaitResult           // a tail waits for its result to be taken (the emitter's order)
	stPrepare                  // the reads ahead of the write, one goroutine each
	stFeedWaitWindow           // the feeder waits for the results window (resultsAhead)
	stFeedWaitPrepare          // the feeder waits for a place to prepare ahead
	stFeedWaitWorker           // the feeder waits for a free worker
	stEmitSettle               // the emitter waits for a written object's delete to return
	stEmit                     // the emitter writes the object's line
	nStages
)

var stageNames = [nStages]string{
	"worker: wait for an object", "worker: wait for its reads", "worker: write", "worker: wait for a tail's place",
	"tail: publish, then delete or move", "tail: wait for its result to be taken", "reads ahead (Step Functions, replace payloads)",
	"feeder: wait for the results window", "feeder: wait for a place to read ahead", "feeder: wait for a free worker",
	"emitter: wait for the delete", "emitter: write the line",
}

// processStart is about when the process started (this package's
// initialisation), and phases the seconds of the steps before the run
// (Open, Plan): the stage times file tells what the run waited for before
// its first write too.
var (
	processStart = time.Now()
	phases       struct{ open, plan atomic.Int64 }
)

// notePhase adds the time since t0 to a phase's.
func notePhase(p *atomic.Int64, t0 time.Time) { p.Add(int64(time.Since(t0))) }

// stageClock sums each stage's time; a nil clock clocks nothing.
type stageClock struct {
	ns, n [nStages]atomic.Int64
}

// newStageClock is a clock when StageTimesEnv is set, else nil.
func newStageClock() *stageClock {
	if os.Getenv(StageTimesEnv) == "" {
		return nil
	}
	return &stageClock{}
}

// start returns the time to hand to add (zero when c is nil).
func (c *stageClock) start() time.Time {
	if c == nil {
		return time.Time{}
	}
	return time.Now()
}

// add clocks the time since t0 to stage st.
func (c *stageClock) add(st int, t0 time.Time) {
	if c == nil {
		return
	}
	c.ns[st].Add(int64(time.Since(t0)))
	c.n[st].Add(1)
}

// write writes the stage times to StageTimesEnv's file, with the run's
// wall time and concurrency.
func (c *stageClock) write(start time.Time, wall time.Duration, concurrency int) error {
	if c == nil {
		return nil
	}
	type stage struct {
		Stage   string  `json:"stage"`
		Seconds float64 `json:"seconds"`
		Count   int64   `json:"count"`
	}
	out := struct {
		WallSeconds float64 `json:"wall_seconds"`
		Concurrency int     `json:"concurrency"`
		// Before the run: from the process's start to the run's, and in it
		// the session's opening (the database, the lock) and the plan pass.
		BeforeSeconds float64 `json:"before_run_seconds"`
		OpenSeconds   float64 `json:"open_seconds"`
		PlanSeconds   float64 `json:"plan_seconds"`
		Stages        []stage `json:"stages"`
	}{WallSeconds: wall.Seconds(), Concurrency: concurrency, BeforeSeconds: start.Sub(processStart).Seconds(),
		OpenSeconds: time.Duration(phases.open.Load()).Seconds(), PlanSeconds: time.Duration(phases.plan.Load()).Seconds()}
	for i := range nStages {
		out.Stages = append(out.Stages, stage{stageNames[i], time.Duration(c.ns[i].Load()).Seconds(), c.n[i].Load()})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(os.Getenv(StageTimesEnv), append(b, '\n'), 0o644)
}
