package selection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// folderStore lists date folders of perFolder generated keys each, like a
// store whose listings are round trips (Listings() > 1). Only List is
// implemented. It counts the folder listings running at once.
type folderStore struct {
	archive.Store // nil: a scan of keys calls only List
	root          string
	folders       int
	perFolder     int
	listings      int
	failFolder    string // this folder's listing fails halfway through

	mu        sync.Mutex
	active    int
	maxActive int
	reached   chan struct{} // closed once listings folder listings run at once
	closed    bool
}

func newFolderStore(folders, perFolder, listings int) *folderStore {
	return &folderStore{root: dla.Layout{Stack: "demo"}.AreaPrefix(dla.AreaSQS), folders: folders,
		perFolder: perFolder, listings: listings, reached: make(chan struct{})}
}

func (s *folderStore) Listings() int { return s.listings }

func (s *folderStore) folder(i int) string {
	return s.root + time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format(dla.DateLayout) + "/"
}

// want is every key, in the order a scan must yield them.
func (s *folderStore) want() []string {
	var keys []string
	for f := range s.folders {
		for i := range s.perFolder {
			keys = append(keys, fmt.Sprintf("%sobj-%05d", s.folder(f), i))
		}
	}
	return keys
}

func (s *folderStore) List(ctx context.Context, prefix string, delimited bool, fn func(archive.Entry) error) error {
	if delimited {
		for f := range s.folders {
			if err := fn(archive.Entry{Key: s.folder(f), IsPrefix: true}); err != nil {
				return err
			}
		}
		return nil
	}
	s.mu.Lock()
	s.active++
	s.maxActive = max(s.maxActive, s.active)
	if s.active == s.listings && s.maxActive == s.active && !s.closed {
		s.closed = true
		close(s.reached)
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.active--
		s.mu.Unlock()
	}()
	for i := range s.perFolder {
		if prefix == s.failFolder && i == s.perFolder/2 {
			return errors.New("boom")
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(archive.Entry{Key: fmt.Sprintf("%sobj-%05d", prefix, i)}); err != nil {
			return err
		}
	}
	return nil
}

func (s *folderStore) String() string { return "folders" }

// still reports the folder listings still running.
func (s *folderStore) still() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

var folderScope = Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS}

// TestFoldersAreListedConcurrentlyInOrder: with 8 listings allowed, 8 date
// folders are listed at once (the first key is held until they are), never
// more, and the keys still come folder by folder in key order. Each folder
// holds more keys than a folder listed ahead may buffer, so the listings
// ahead wait on the one whose turn it is.
func TestFoldersAreListedConcurrentlyInOrder(t *testing.T) {
	s := newFolderStore(40, 3*listAhead, 8)
	var got []string
	err := produce(context.Background(), s, folderScope, func(e archive.Entry) error {
		if len(got) == 0 {
			select {
			case <-s.reached:
			case <-time.After(20 * time.Second): // a guard against hanging, not a measure
				t.Fatalf("only %d folder listings ran at once, want 8", s.maxActive)
			}
		}
		got = append(got, e.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := s.want(); !slices.Equal(got, want) {
		t.Fatalf("got %d keys, want %d, or out of order", len(got), len(want))
	}
	if s.maxActive != 8 {
		t.Errorf("%d folder listings ran at once, want at most (and here exactly) 8", s.maxActive)
	}
}

// TestConcurrentListingStopsCleanly: when the consumer stops (an error from
// yield, or the context cancelled), every folder listing running ahead has
// returned by the time produce does: none is left blocked.
func TestConcurrentListingStopsCleanly(t *testing.T) {
	errStop := errors.New("stop")
	for _, tc := range []struct {
		name string
		want error
	}{{"yield error", errStop}, {"cancelled", context.Canceled}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFolderStore(40, 3*listAhead, 8)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			err := produce(ctx, s, folderScope, func(archive.Entry) error {
				if n++; n == 1 {
					<-s.reached // listings ahead are running (and soon blocked on their buffers)
				}
				if n == 10 {
					if tc.want == errStop {
						return errStop
					}
					cancel()
				}
				return nil
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if a := s.still(); a != 0 {
				t.Errorf("%d folder listings still running after produce returned", a)
			}
		})
	}
}

// TestConcurrentListingErrorIsInOrder: a folder whose listing fails stops
// the scan where the serial listing stops it: every key before the failure
// is yielded, none after, and the error names the folder.
func TestConcurrentListingErrorIsInOrder(t *testing.T) {
	scan := func(listings int) ([]string, error, *folderStore) {
		s := newFolderStore(40, 100, listings)
		s.failFolder = s.folder(5)
		var got []string
		err := produce(context.Background(), s, folderScope, func(e archive.Entry) error {
			got = append(got, e.Key)
			return nil
		})
		return got, err, s
	}
	serial, serr, _ := scan(1)
	got, err, s := scan(8)
	if err == nil || serr == nil || err.Error() != serr.Error() || !strings.Contains(err.Error(), "listing "+s.folder(5)+": boom") {
		t.Fatalf("err = %v, serial err = %v", err, serr)
	}
	if len(serial) != 5*100+50 || !slices.Equal(got, serial) {
		t.Fatalf("got %d keys, serial %d, or in another order", len(got), len(serial))
	}
	if a := s.still(); a != 0 {
		t.Errorf("%d folder listings still running after produce returned", a)
	}
}
