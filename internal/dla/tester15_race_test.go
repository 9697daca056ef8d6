//go:build race

package dla

// t15Race: the race detector slows the single-goroutine attack tests
// tenfold and finds nothing in them; they run smaller under it.
const t15Race = true
