// Package jsonlog writes the processors' structured log: one JSON object
// per line (CloudWatch Logs reads each line as one event), field names in
// snake_case as in the CLIs' JSON output.
package jsonlog

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// mu keeps lines whole when records are handled concurrently.
var mu sync.Mutex

// Line writes v as one JSON line to w; nothing when w is nil. A value that
// cannot be encoded is replaced by a line saying so.
func Line(w io.Writer, v any) {
	if w == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = fmt.Appendf(nil, `{"type":"error","error":%q}`, err.Error())
	}
	mu.Lock()
	defer mu.Unlock()
	_, _ = w.Write(append(b, '\n'))
}
