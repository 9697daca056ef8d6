// Command testreport reads `go test -json` on its standard input and
// prints what `go test` without -json prints (each failing test's output
// and each package's summary line), and fails a run that did not run the
// tests it was given, which `go test` reports as "ok":
//
//	go test -json ./... | testreport [-strict] [-want 'TestA|TestB']
//
// It exits 1, naming the package, when:
//   - a package's test binary passed without running a test, and without
//     m.Run's "testing: warning: no tests to run" (or "no fuzz tests to
//     fuzz"): its TestMain returned
//     or called os.Exit(0) before m.Run ran a test;
//   - with -strict, a package that has test files ran no test, whatever it
//     said (scripts/test runs every test of a package unless a -run of its
//     own narrows it);
//   - with -want, one of those top-level names (a -run pattern's names,
//     separated by |) did not run in any of the packages tested.
//
// With -slowest N, each package's summary is followed by its N slowest
// top-level tests and their seconds, so a suite's log says where its time
// went without -v.
//
// It exits 1 too when a package failed (go test has said so). Otherwise
// it prints how many tests ran. scripts/test builds it and pipes
// every `go test` job through it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	strict := flag.Bool("strict", false, "a package with test files that ran no test fails")
	want := flag.String("want", "", "top-level tests, separated by |, each of which must run")
	slowest := flag.Int("slowest", 0, "after each package, name its N slowest top-level tests")
	flag.Parse()
	var names []string
	if *want != "" {
		names = strings.Split(*want, "|")
	}
	os.Exit(report(os.Stdin, os.Stdout, options{strict: *strict, want: names, slowest: *slowest}))
}

// event is one line of `go test -json` (cmd/test2json's TestEvent, and the
// build events of Go 1.24 and later).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Output     string
	Elapsed    float64 // seconds, on a test's pass, skip or fail
}

// options are testreport's flags.
type options struct {
	strict  bool
	want    []string
	slowest int
}

// pkg is what a package's events have said so far.
type pkg struct {
	out       strings.Builder   // printed when the package ends
	tests     map[string]*tcase // the tests (and subtests) whose top-level test runs
	order     []string          // their names, in the order they first spoke
	ran       map[string]bool   // the top-level tests that started
	took      []timed           // the top-level tests that ended, with their seconds
	noTests   bool              // m.Run said "no tests to run"
	benchmark bool              // a benchmark ran
	ended     bool
	summary   bool // go test printed the package's "ok" or "FAIL" line
}

// timed is a top-level test's name and its seconds.
type timed struct {
	name    string
	seconds float64
}

// tcase is a test's output: its "--- FAIL: name (1.00s)" line, printed
// first as go test without -v does, and the rest.
type tcase struct {
	head string
	body strings.Builder
}

// report renders r's events to w and returns the exit status.
func report(r io.Reader, w io.Writer, opt options) int {
	strict, want := opt.strict, opt.want
	pkgs := map[string]*pkg{}
	var seen []string // packages, in the order they started
	get := func(name string) *pkg {
		p := pkgs[name]
		if p == nil {
			p = &pkg{tests: map[string]*tcase{}, ran: map[string]bool{}}
			pkgs[name] = p
			seen = append(seen, name)
		}
		return p
	}
	var failures []string
	failed := false // a package failed, as go test says
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		failures = append(failures, msg)
		fmt.Fprintf(w, "test: FAILED: %s\n", msg)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Fprintf(w, "%s\n", line) // not an event: go test's own words
			continue
		}
		switch e.Action {
		case "build-output":
			io.WriteString(w, e.Output)
			continue
		case "build-fail":
			continue
		}
		p := get(e.Package)
		top, _, _ := strings.Cut(e.Test, "/")
		if strings.HasPrefix(top, "Benchmark") || e.Action == "bench" {
			p.benchmark = true
		}
		switch {
		case e.Action == "output" && e.Test == "":
			if strings.HasPrefix(e.Output, "testing: warning: no ") { // tests to run, fuzz tests to fuzz
				p.noTests = true
			}
			if e.Output != "PASS\n" { // go test without -json prints only "ok"
				p.out.WriteString(e.Output)
			}
			if strings.HasPrefix(e.Output, "ok  \t") || strings.HasPrefix(e.Output, "FAIL\t") {
				p.summary = true
			}
		case e.Action == "output":
			if framing(e.Output) {
				continue
			}
			c := p.test(e.Test)
			if strings.HasPrefix(strings.TrimLeft(e.Output, " "), "--- ") {
				c.head = strings.TrimLeft(e.Output, " ")
			} else {
				c.body.WriteString(e.Output)
			}
		case e.Action == "run":
			p.test(e.Test)
			if e.Test == top && !strings.HasPrefix(top, "Benchmark") {
				p.ran[top] = true
			}
		case (e.Action == "pass" || e.Action == "skip" || e.Action == "fail") && e.Test == top && e.Test != "":
			p.flush(top, e.Action == "fail")
			p.took = append(p.took, timed{top, e.Elapsed})
		case (e.Action == "pass" || e.Action == "skip" || e.Action == "fail") && e.Test == "":
			p.ended = true
			failed = failed || e.Action == "fail"
			if !p.summary && e.Action != "skip" {
				// A test binary run under test2json (scripts/test runs a
				// package's built binary for each of its passes): the
				// summary line is go test's, so it is written here.
				fmt.Fprintf(&p.out, "%s\t%s\t%.3fs\n", map[bool]string{true: "FAIL", false: "ok  "}[e.Action == "fail"], e.Package, e.Elapsed)
			}
			end(w, p, e.Action == "fail")
			slowestTests(w, p.took, opt.slowest)
			if e.Action == "pass" && len(p.ran) == 0 && !p.benchmark {
				switch {
				case !p.noTests:
					fail("%s: its test binary exited with status 0 before running a test (a TestMain that returns or calls os.Exit before m.Run?)", e.Package)
				case strict:
					fail("%s: has test files but ran no test (its words are above)", e.Package)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		fail("reading go test -json: %v", err)
	}
	total := 0
	for _, name := range seen {
		p := pkgs[name]
		total += len(p.ran)
		if !p.ended {
			end(w, p, true)
			fail("%s: its tests did not finish (go test stopped?)", name)
		}
	}
	if len(want) > 0 {
		var missing []string
		for _, name := range want {
			found := false
			for _, p := range pkgs {
				found = found || p.ran[name]
			}
			if !found {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			fail("%s: %d of the %d tests given did not run: %s", strings.Join(seen, ", "), len(missing), len(want), strings.Join(missing, ", "))
		}
	}
	if failed || len(failures) > 0 {
		return 1
	}
	fmt.Fprintf(w, "test: %s ran in %s\n", plural(total, "test"), plural(len(seen), "package"))
	return 0
}

// end prints a package's output: with the output of the tests still
// running when it failed (a panic, a timeout) before its summary.
func end(w io.Writer, p *pkg, failed bool) {
	summary := p.out.String()
	p.out.Reset()
	for _, name := range append([]string(nil), p.order...) {
		if !strings.Contains(name, "/") {
			p.flush(name, failed)
		}
	}
	io.WriteString(w, p.out.String()+summary)
}

// slowestTests prints the n slowest of took, slowest first, on one line.
func slowestTests(w io.Writer, took []timed, n int) {
	if n <= 0 || len(took) == 0 {
		return
	}
	sorted := append([]timed(nil), took...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].seconds > sorted[j].seconds })
	if len(sorted) > n {
		sorted = sorted[:n]
	}
	parts := make([]string, len(sorted))
	for i, t := range sorted {
		parts[i] = fmt.Sprintf("%s %.1f s", t.name, t.seconds)
	}
	fmt.Fprintf(w, "test: slowest: %s\n", strings.Join(parts, ", "))
}

// test is the test named name, a new one the first time.
func (p *pkg) test(name string) *tcase {
	c := p.tests[name]
	if c == nil {
		c = &tcase{}
		p.tests[name] = c
		p.order = append(p.order, name)
	}
	return c
}

// flush ends the top-level test top: if print, its output and its
// failing or unfinished subtests' go to the package's output, indented
// by depth under their "--- FAIL" lines.
func (p *pkg) flush(top string, print bool) {
	order := p.order[:0]
	for _, name := range p.order {
		if name != top && !strings.HasPrefix(name, top+"/") {
			order = append(order, name)
			continue
		}
		c := p.tests[name]
		delete(p.tests, name)
		if !print || (c.head != "" && !strings.HasPrefix(c.head, "--- FAIL")) {
			continue
		}
		indent := strings.Repeat("    ", strings.Count(name, "/"))
		p.out.WriteString(indent + c.head)
		for _, line := range strings.SplitAfter(c.body.String(), "\n") {
			if line != "" {
				p.out.WriteString(indent + line)
			}
		}
	}
	p.order = order
}

// framing says whether a line is test2json's -v framing, which go test
// without -v does not print.
func framing(line string) bool {
	s := strings.TrimLeft(line, " ")
	for _, f := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(s, f) {
			return true
		}
	}
	return false
}

// plural is "1 test", "2 tests".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
