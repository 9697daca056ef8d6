package archive

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLocalReadsAmidFolderSwapsMovesAndDropsGiveOnlyTheirOwnBytes: 16
// goroutines list and read 140 date folders out of order (far more than
// the folders kept open) while a date folder is put away and replaced by a
// link, out of the archive or to another date folder, and back; objects
// are moved between sqs/ and failed-sqs/ (their folders made and removed);
// and folders are let go (forgetFolder) while reads hold them. Every read
// gives its own object's bytes or an error naming its key: never a file
// outside the archive, never another object's bytes, never a folder's
// descriptor closed under a read and reused (run it with -race).
func TestLocalReadsAmidFolderSwapsMovesAndDropsGiveOnlyTheirOwnBytes(t *testing.T) {
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	outside := t.TempDir()
	top := "demo/dead-letter-archive"
	sqs := filepath.Join(dir, top, "sqs")
	dates := WriteDateFolders(t, sqs, 120, 3, func(d string, j int) []byte { return []byte(`{"k":"sqs/` + d + `/o` + fmt.Sprint(j) + `"}`) })
	WriteDateFolders(t, outside, 120, 3, func(string, int) []byte { return []byte(`{"k":"OUTSIDE"}`) })
	var mdates []string
	for i := range 20 {
		d := fmt.Sprintf("2025-01-%02d", 1+i)
		mdates = append(mdates, d)
		must(os.MkdirAll(filepath.Join(sqs, d), 0o755))
		must(os.WriteFile(filepath.Join(sqs, d, "m"), []byte(`{"k":"`+d+`/m"}`), 0o644))
	}
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad, reads, errs atomic.Int64
	var badMu sync.Mutex
	var badEx []string
	report := func(s string) {
		bad.Add(1)
		badMu.Lock()
		if len(badEx) < 20 {
			badEx = append(badEx, s)
		}
		badMu.Unlock()
	}
	check := func(key string, b []byte, err error) {
		reads.Add(1)
		if err != nil {
			errs.Add(1)
			if !strings.Contains(err.Error(), key) {
				report(fmt.Sprintf("error does not name key %s: %v", key, err))
			}
			return
		}
		rel := strings.TrimPrefix(key, top+"/")
		var want string
		if strings.Contains(rel, "/2025-") {
			want = `{"k":"` + strings.SplitN(rel, "/", 2)[1] + `"}`
		} else {
			want = `{"k":"` + rel + `"}`
		}
		if string(b) != want {
			report(fmt.Sprintf("%s read %q", key, b))
		}
	}
	// readers
	var readers sync.WaitGroup
	for g := range 16 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			buf := make([]byte, 0, 8)
			for range 1500 {
				switch r.IntN(4) {
				case 0: // a listing of a folder then reads of it
					d := dates[r.IntN(len(dates))]
					_ = l.List(ctx, top+"/sqs/"+d+"/", false, func(e Entry) error {
						b, err := l.GetInto(ctx, e.Key, buf)
						check(e.Key, b, err)
						if err == nil {
							buf = b[:0]
						}
						return nil
					})
				case 1:
					_ = l.List(ctx, top+"/sqs/", true, func(e Entry) error { return nil })
				default:
					d := dates[r.IntN(len(dates))]
					if r.IntN(5) == 0 {
						d = mdates[r.IntN(len(mdates))]
						area := []string{"sqs", "failed-sqs"}[r.IntN(2)]
						k := top + "/" + area + "/" + d + "/m"
						b, err := l.GetInto(ctx, k, buf)
						check(k, b, err)
						continue
					}
					k := top + "/sqs/" + d + "/o" + fmt.Sprint(r.IntN(3))
					b, err := l.GetInto(ctx, k, buf)
					check(k, b, err)
					if err == nil {
						buf = b[:0]
					}
				}
			}
		}()
	}
	// attacker: swap folders for links out and to other folders inside
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(99, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			d := dates[r.IntN(len(dates))]
			p := filepath.Join(sqs, d)
			away := filepath.Join(sqs, ".dla-tmp-0000000000000000")
			if os.Rename(p, away) != nil {
				continue
			}
			target := filepath.Join(outside, d)
			if r.IntN(2) == 0 {
				target = filepath.Join(sqs, dates[r.IntN(len(dates))])
			}
			os.Symlink(target, p)
			time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
			os.Remove(p)
			os.Rename(away, p)
		}
	}()
	// mover
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(7, 3))
		for {
			select {
			case <-stop:
				return
			default:
			}
			d := mdates[r.IntN(len(mdates))]
			for _, pair := range [][2]string{{"sqs", "failed-sqs"}, {"failed-sqs", "sqs"}} {
				src := top + "/" + pair[0] + "/" + d + "/m"
				dst := top + "/" + pair[1] + "/" + d + "/m"
				if _, err := Move(ctx, l, src, dst); err == nil {
					break
				}
			}
		}
	}()
	// dropper
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(5, 4))
		a, _ := l.locate(top + "/sqs/x")
		for {
			select {
			case <-stop:
				return
			default:
			}
			l.forgetFolder(a, "sqs/"+dates[r.IntN(len(dates))])
			if r.IntN(50) == 0 {
				l.forgetFolder(a, "sqs")
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	readers.Wait()
	close(stop)
	wg.Wait()
	t.Logf("%d reads, %d refused", reads.Load(), errs.Load())
	for _, s := range badEx {
		t.Error(s)
	}
}
