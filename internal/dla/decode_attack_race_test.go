//go:build race

package dla

// raceDetector: the race detector slows the single-goroutine attack tests
// tenfold and finds nothing in them; they run smaller under it.
const raceDetector = true
