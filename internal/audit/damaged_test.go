package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

// recordOfChunks writes a finished run of 3 chunks of 2 items each in a
// local folder, and returns the folder's directory and the run as listed.
func recordOfChunks(t *testing.T) (string, archive.Store, Run) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := archive.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Begin(ctx, s, "a/", Started{Tool: "dla", Verb: "recover", StartedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)},
		Options{ChunkLines: 2, ChunkEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		r.Add(Item{Key: fmt.Sprintf("k%d", i), Action: "deleted"})
	}
	if err := r.Finish(ctx, Finished{}); err != nil {
		t.Fatal(err)
	}
	runs, _, err := List(ctx, s, "a/", Filter{})
	if err != nil || len(runs) != 1 || len(runs[0].Chunks) != 3 {
		t.Fatalf("runs %+v, err %v", runs, err)
	}
	return dir, s, runs[0]
}

// A chunk the store refuses (over its 64 MiB) hides its own items only:
// the others are read, and the problem is named.
func TestAnUnreadableChunkIsNamedAndTheOtherChunksAreRead(t *testing.T) {
	dir, s, run := recordOfChunks(t)
	if err := os.Truncate(filepath.Join(dir, run.Chunks[1]), archive.MaxObjectSize+1); err != nil {
		t.Fatal(err)
	}
	if err := run.LoadItems(context.Background(), s); err != nil {
		t.Fatalf("LoadItems: %v", err)
	}
	if len(run.Items) != 4 || !strings.Contains(run.Problem, run.Chunks[1]) {
		t.Fatalf("items %d, problem %q", len(run.Items), run.Problem)
	}
}

// A line longer than an item can be is named, not taken silently for the
// end of its chunk.
func TestALineTooLongForAnItemIsNamed(t *testing.T) {
	dir, s, run := recordOfChunks(t)
	long, _ := json.Marshal(Item{Key: strings.Repeat("x", 17<<20), Action: "deleted"})
	if err := os.WriteFile(filepath.Join(dir, run.Chunks[1]), append(long, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run.LoadItems(context.Background(), s); err != nil {
		t.Fatalf("LoadItems: %v", err)
	}
	if len(run.Items) != 4 || !strings.Contains(run.Problem, run.Chunks[1]) {
		t.Fatalf("items %d, problem %q", len(run.Items), run.Problem)
	}
}
