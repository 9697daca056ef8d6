// Package browser opens test pages in headless Chromium (Debian's, which
// scripts/test installs) through the DevTools protocol, and reports what a
// real browser saw: console errors, requests, and the charts' bars.
package browser

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium finds a headless browser: $DEADLETTER_CHROMIUM, else chromium on
// PATH (scripts/test installs Debian's). Without one the test skips, or
// fails when DEADLETTER_REQUIRE_BROWSER=1 (as scripts/test sets).
func chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("DEADLETTER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("DEADLETTER_REQUIRE_BROWSER") == "1" {
		t.Fatal("no Chromium found (apt-get install chromium, or set DEADLETTER_CHROMIUM)")
	}
	t.Skip("no Chromium found (apt-get install chromium, or set DEADLETTER_CHROMIUM)")
	return ""
}

// Page is what a page showed a real browser.
type Page struct {
	Charts   map[string]ChartCount
	Errors   []string // console errors and uncaught exceptions
	Requests []string // every URL the page asked for
}

// ChartCount is one chart as drawn: its columns (stacked charts), bars and
// the sum of their values.
type ChartCount struct {
	Columns int `json:"columns"`
	Bars    int `json:"bars"`
	Sum     int `json:"sum"`
}

// Tab is a headless Chromium tab (Ctx, for chromedp.Run) that records
// what its pages report: console errors and warnings, uncaught
// exceptions, error log entries, and every request. Run
// network.Enable(), log.Enable() and runtime.Enable() on it first.
type Tab struct {
	Ctx              context.Context
	mu               sync.Mutex
	errors, requests []string
}

// NewTab starts Chromium with a window width×height, without background
// networking; it is closed when the test ends.
func NewTab(t testing.TB, width, height int) *Tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(width, height))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	tab := &Tab{Ctx: ctx}
	chromedp.ListenTarget(ctx, func(ev any) {
		tab.mu.Lock()
		defer tab.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning {
				tab.errors = append(tab.errors, "console "+string(ev.Type))
			}
		case *runtime.EventExceptionThrown:
			tab.errors = append(tab.errors, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.LevelError {
				tab.errors = append(tab.errors, "log: "+ev.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			tab.requests = append(tab.requests, ev.Request.URL)
		}
	})
	return tab
}

// Seen is what the tab's pages reported so far.
func (tab *Tab) Seen() (errors, requests []string) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.errors...), append([]string(nil), tab.requests...)
}

// Open loads an HTML file in headless Chromium at 1280×800, counts
// the bars of every chart, and saves a full-page screenshot as png.
func Open(t testing.TB, path, png string) Page {
	t.Helper()
	tab := NewTab(t, 1280, 800)
	ctx := tab.Ctx
	page := Page{}
	var counts string
	var shot []byte
	abs, _ := filepath.Abs(path)
	err := chromedp.Run(ctx,
		network.Enable(), log.Enable(), runtime.Enable(),
		chromedp.Navigate("file://"+abs),
		chromedp.WaitReady("body"),
		chromedp.Evaluate(`JSON.stringify(Object.fromEntries([...document.querySelectorAll("svg.chart")].map(s => [s.id, {
			columns: s.querySelectorAll("g.column").length,
			bars: s.querySelectorAll("rect.bar").length,
			sum: [...s.querySelectorAll("rect.bar")].reduce((a, r) => a + Number(r.dataset.value), 0)
		}])))`, &counts),
		chromedp.FullScreenshot(&shot, 100), // 100: PNG,
	)
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if err := json.Unmarshal([]byte(counts), &page.Charts); err != nil {
		t.Fatalf("%v: %s", err, counts)
	}
	if png != "" {
		if err := os.WriteFile(png, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", png)
	}
	page.Errors, page.Requests = tab.Seen()
	return page
}

// ScreenshotPath is where a test saves a screenshot for a person to look
// at: $DEADLETTER_TEST_OUTPUT (scripts/test sets .cache/test-output), else
// the test's temporary directory.
func ScreenshotPath(t testing.TB, name string) string {
	dir := os.Getenv("DEADLETTER_TEST_OUTPUT")
	if dir == "" {
		dir = t.TempDir()
	}
	os.MkdirAll(dir, 0o755)
	return filepath.Join(dir, name)
}
