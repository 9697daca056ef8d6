package selection

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

// sizedStore lists one date folder of objects of the sizes given, as a
// store read over the network, and counts the objects read and not yet
// handed over.
type sizedStore struct {
	archive.Store // nil: only List and GetInto are called
	sizes         []int64

	mu                sync.Mutex
	unseen, maxUnseen int
}

func (s *sizedStore) List(ctx context.Context, prefix string, delimited bool, fn func(archive.Entry) error) error {
	if delimited {
		return fn(archive.Entry{Key: folderScope.Layout.AreaPrefix(folderScope.Area) + "2024-01-01/", IsPrefix: true})
	}
	for i, size := range s.sizes {
		if err := fn(archive.Entry{Key: fmt.Sprintf("%sobj-%05d", prefix, i), Size: size}); err != nil {
			return err
		}
	}
	return nil
}

func (s *sizedStore) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	s.mu.Lock()
	s.unseen++
	s.maxUnseen = max(s.maxUnseen, s.unseen)
	s.mu.Unlock()
	time.Sleep(time.Millisecond) // a read takes a while: many would be in flight
	return append(buf[:0], `{"Body":"{}"}`...), nil
}

func (s *sizedStore) seen() {
	s.mu.Lock()
	s.unseen--
	s.mu.Unlock()
}

// Objects of a store read over the network are held, from their listing
// to their hand-over, within bytesInFlight by their listed sizes: at most
// three of 20 MiB at once at concurrency 16, where the count alone would
// let 16 and more be read ahead. An object larger than the bound is read
// alone, and the run still ends.
func TestObjectsInFlightAreBoundByTheirListedSizes(t *testing.T) {
	for name, sizes := range map[string][]int64{
		"20 MiB each":         repeat(40, 20<<20),
		"one larger than all": append(append(repeat(10, 20<<20), 300<<20), repeat(10, 20<<20)...),
	} {
		t.Run(name, func(t *testing.T) {
			s := &sizedStore{sizes: sizes}
			done := make(chan error, 1)
			n := 0
			go func() {
				_, err := Run(context.Background(), s, folderScope, 16, func(Result) error {
					n++
					s.seen()
					return nil
				})
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the run did not end")
			}
			if n != len(sizes) {
				t.Fatalf("%d objects handed over, want %d", n, len(sizes))
			}
			if s.maxUnseen > int(bytesInFlight/(20<<20)) {
				t.Fatalf("%d objects of 20 MiB read and not handed over at once, want at most %d", s.maxUnseen, bytesInFlight/(20<<20))
			}
		})
	}
}

func repeat(n int, size int64) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = size
	}
	return s
}
