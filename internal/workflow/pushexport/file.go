// Package pushexport is pushdlq export's file: the write-ahead journal of
// an export, FILE.partial, which a message's line reaches (synced to disk)
// before the message is deleted from the DLQ, and which becomes FILE only
// once complete; and the deletes that follow it. The verb
// (internal/cli/pushdlqcmd) keeps the flags, the confirmations, the
// messages and the printed commands; the DLQ session is dlqsession's.
package pushexport

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// File writes messages to FILE.partial and publishes it as FILE only once
// it is complete and on disk.
type File struct {
	Final, Partial string // FILE ("-": stdout) and FILE.partial ("stdout")
	f              *os.File
	w              *bufio.Writer
	sum            hash.Hash
	n              int64
	dirSynced      bool
	// A resumed export: the message ids of the lines that were in the
	// partial file (never written again), and how many lines that was.
	inFile  map[string]bool
	resumed int
	// The queue the export reads: RecordSource's, or for a resumed export
	// FILE.partial.source's (or its lines'). Each line written records it.
	source string
}

// line is an exported line: the message (without its receipt handle) and
// the queue it was received from, which a resume checks each line of
// FILE.partial against. Lines of an older build have no queue.
type line struct {
	sqsmove.Message
	Queue string `json:"queue,omitempty"`
}

// Create starts an export to path: FILE.partial, created (never an
// existing one), or stdout for "-".
func Create(path string, stdout io.Writer) (*File, error) {
	if path == "-" {
		return &File{Final: "-", Partial: "stdout", w: bufio.NewWriter(stdout), sum: sha256.New()}, nil
	}
	partial := path + ".partial"
	f, err := os.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", partial, err)
	}
	return &File{Final: path, Partial: partial, f: f, w: bufio.NewWriterSize(f, 1<<20), sum: sha256.New()}, nil
}

// Bytes is how many bytes the file holds (its lines so far).
func (e *File) Bytes() int64 { return e.n }

// Digest is the SHA-256 of the file's lines so far, in hex.
func (e *File) Digest() string { return hex.EncodeToString(e.sum.Sum(nil)) }

// Resumed is how many lines FILE.partial held when OpenPartial read it.
func (e *File) Resumed() int { return e.resumed }

// Holds reports whether a resumed file held the message of this id.
func (e *File) Holds(messageID string) bool { return e.inFile[messageID] }

// Write appends m's line (without its receipt handle, with the queue the
// export reads).
func (e *File) Write(m *sqsmove.Message) error {
	l := line{Message: *m, Queue: e.source}
	l.ReceiptHandle = ""
	b, err := json.Marshal(&l)
	if err != nil {
		return fmt.Errorf("encode message %s: %w", m.MessageID, err)
	}
	b = append(b, '\n')
	e.sum.Write(b)
	e.n += int64(len(b))
	if _, err := e.w.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", e.Partial, err)
	}
	return nil
}

// Sync flushes the partial file and syncs it to disk (and, the first
// time, its directory, which holds the new file's name): the write-ahead
// of deleting the messages it holds.
func (e *File) Sync() error {
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", e.Partial, err)
	}
	if e.f == nil {
		return errors.New("stdout cannot be synced")
	}
	if err := e.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", e.Partial, err)
	}
	if !e.dirSynced {
		d, err := os.Open(filepath.Dir(e.Partial))
		if err == nil {
			err = d.Sync()
			d.Close()
		}
		if err != nil {
			return fmt.Errorf("sync the directory of %s: %w", e.Partial, err)
		}
		e.dirSynced = true
	}
	return nil
}

// Commit flushes, syncs, makes FILE.partial FILE (never replacing an
// existing FILE) and syncs the directory.
func (e *File) Commit() error {
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", e.Partial, err)
	}
	if e.f == nil {
		return nil
	}
	if err := e.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", e.Partial, err)
	}
	if err := e.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", e.Partial, err)
	}
	if err := publish(e.Partial, e.Final); err != nil {
		return err
	}
	os.Remove(sourcePath(e.Final)) // the export is whole: nothing to resume
	if d, err := os.Open(filepath.Dir(e.Final)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Abort leaves the partial file for inspection: it is never mistaken for
// a complete export. It is never removed: once an export read on past
// SQS's in-flight limit, it holds the only copy of what was deleted.
func (e *File) Abort() {
	if e.f != nil {
		e.w.Flush()
		e.f.Close()
	}
}

// Lock takes FILE.partial.lock, so that an export and a resume (or two
// resumes) never write one partial file at once: a second resume would
// not know the first one's lines, and write a message twice. Taken by
// another run: sqsmove.ErrJournalLocked.
func Lock(out string) (unlock func(), err error) {
	return sqsmove.LockJournal(out + ".partial")
}

// NotAnExportError is a line of FILE.partial that is not an exported
// message, or not one of this export (Why says what is wrong with it: its
// message id is an earlier line's, or it is another queue's): OpenPartial
// leaves the file as it is.
type NotAnExportError struct {
	File string
	Line int
	Why  string // "": not an exported message
}

func (e *NotAnExportError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("line %d of %s is not a line of this export: %s; the file was left as it is, nothing was received or deleted", e.Line, e.File, e.Why)
	}
	return fmt.Sprintf("line %d of %s is not an exported message; it was left as it is", e.Line, e.File)
}

// OpenPartial reopens FILE.partial to finish the export that left it: its
// whole lines are read (each must be an exported message, else
// *NotAnExportError), their message ids kept and their bytes hashed; a
// torn last line is cut off (said on errOut), and the file is synced
// before anything is deleted. A line whose message id an earlier line has,
// or that records another queue than FILE.partial.source (or, without
// it, than the first line that records one), was not written by this
// export (an export writes each message once, from one queue): a file
// edited by hand, refused (*NotAnExportError naming the line) and left as
// it is. No FILE.partial: an error that is os.ErrNotExist.
func OpenPartial(path string, errOut io.Writer) (*File, error) {
	partial := path + ".partial"
	f, err := os.OpenFile(partial, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", partial, err)
	}
	e := &File{Final: path, Partial: partial, f: f, sum: sha256.New(), inFile: map[string]bool{}}
	// The queue every line must record (when it records one), and what
	// named it.
	queueFrom := ""
	if b, err := os.ReadFile(sourcePath(path)); err == nil {
		e.source = strings.TrimSpace(string(b))
		queueFrom = filepath.Base(sourcePath(path)) + " records"
	}
	firstLine := map[string]int{}
	r := bufio.NewReaderSize(f, 1<<20)
	// lastWithoutNewline: the last line is a whole exported message that
	// lacks only its newline (taken off by hand or by an editor, or a kill
	// between the line and its newline): it is kept, and its newline
	// written, never cut. Its message may have been deleted from the DLQ,
	// so cutting it could lose it; kept, a message still in the DLQ is
	// found in the file and deleted, not written twice.
	lastWithoutNewline := false
	for lineNo := 1; ; lineNo++ {
		b, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(b) > 0 && wholeExportLine(b) {
			lastWithoutNewline, err = true, nil
			b = append(b, '\n')
		}
		if errors.Is(err, io.EOF) {
			if len(b) > 0 && !tornExportLine(b) {
				// Not the start of an exported message: a file of another
				// kind, never cut.
				f.Close()
				return nil, &NotAnExportError{File: partial, Line: lineNo}
			}
			if len(b) > 0 {
				// Never synced with its newline, so never deleted: the
				// message is still in the DLQ, and the scan writes it again.
				fmt.Fprintf(errOut, "cut the torn last line of %s (%d bytes): the stopped export died writing it; that message was not deleted, it is still in the DLQ\n", partial, len(b))
			}
			break
		} else if err != nil {
			f.Close()
			return nil, fmt.Errorf("read %s: %w", partial, err)
		}
		var m line
		if err := json.Unmarshal(bytes.TrimSpace(b), &m); err != nil || m.MessageID == "" {
			f.Close()
			return nil, &NotAnExportError{File: partial, Line: lineNo}
		}
		if first, ok := firstLine[m.MessageID]; ok {
			f.Close()
			return nil, &NotAnExportError{File: partial, Line: lineNo,
				Why: fmt.Sprintf("its message id %s is line %d's too (an export writes each message once)", m.MessageID, first)}
		}
		firstLine[m.MessageID] = lineNo
		switch {
		case m.Queue == "":
			// A line of an older build: it does not say.
		case e.source == "":
			e.source, queueFrom = m.Queue, fmt.Sprintf("line %d records", lineNo)
		case !SameQueue(m.Queue, e.source):
			f.Close()
			return nil, &NotAnExportError{File: partial, Line: lineNo,
				Why: fmt.Sprintf("it records the queue %s, and this export reads %s (%s %s): it is a line of another queue's export", sqsmove.Name(m.Queue), sqsmove.Name(e.source), queueFrom, e.source)}
		}
		e.inFile[m.MessageID] = true
		e.sum.Write(b)
		e.n += int64(len(b))
		e.resumed++
		if lastWithoutNewline {
			if _, err := f.WriteAt([]byte{'\n'}, e.n-1); err != nil {
				f.Close()
				return nil, fmt.Errorf("end the last line of %s with its newline: %w", partial, err)
			}
			fmt.Fprintf(errOut, "the last line of %s (line %d, message %s) lacked its newline: it is kept, and its newline written\n", partial, lineNo, m.MessageID)
			break
		}
	}
	if err := f.Truncate(e.n); err != nil {
		f.Close()
		return nil, fmt.Errorf("cut the torn last line of %s: %w", partial, err)
	}
	if _, err := f.Seek(e.n, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("seek %s: %w", partial, err)
	}
	e.w = bufio.NewWriterSize(f, 1<<20)
	// What the stopped run wrote may not be on disk yet (a kill keeps the
	// page cache, a power cut does not): a line is deleted only once synced.
	if err := e.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return e, nil
}

// wholeExportLine reports whether b, a last line without its newline, is
// a whole exported message (JSON with its message id), not a torn one.
func wholeExportLine(b []byte) bool {
	var m line
	return json.Unmarshal(bytes.TrimSpace(b), &m) == nil && m.MessageID != ""
}

// exportLineStart is how every exported line begins (json.Marshal of
// sqsmove.Message, whose first field is the message id).
const exportLineStart = `{"message_id":"`

// tornExportLine reports whether b, a last line without its newline, can
// be the start of an exported line: a run killed while writing one. Any
// other text is not an export's, and is never cut.
func tornExportLine(b []byte) bool {
	if len(b) < len(exportLineStart) {
		return strings.HasPrefix(exportLineStart, string(b))
	}
	return bytes.HasPrefix(b, []byte(exportLineStart))
}

// publish makes the synced partial file FILE without ever replacing a
// FILE that exists (a finished export, whose messages may have been
// deleted from the DLQ): a hard link fails if FILE exists, then the
// partial name is removed. Where hard links are not supported, a rename
// once FILE is seen not to exist (the export's lock keeps other exports
// to FILE out).
func publish(partial, final string) error {
	exists := fmt.Errorf("%s exists: %s is kept and not made %s (it would replace an export whose messages may be gone from the DLQ)", final, partial, final)
	err := os.Link(partial, final)
	switch {
	case err == nil:
		if err := os.Remove(partial); err != nil {
			return fmt.Errorf("remove %s once linked as %s: %w", partial, final, err)
		}
		return nil
	case errors.Is(err, fs.ErrExist):
		return exists
	}
	if _, serr := os.Lstat(final); serr == nil {
		return exists
	}
	if err := os.Rename(partial, final); err != nil {
		return fmt.Errorf("rename %s: %w", partial, err)
	}
	return nil
}

// sourcePath is the file beside FILE.partial that names the queue the
// export reads: a resume of it against another queue would delete nothing
// of the file's and put the other queue's messages in it.
func sourcePath(path string) string { return path + ".partial.source" }

// RecordSource writes (and syncs) the queue URL the export reads beside
// its partial file, before any of its messages is deleted.
func (e *File) RecordSource(queueURL string) error {
	e.source = queueURL // and each line records it
	if e.f == nil {
		return nil
	}
	p := sourcePath(e.Final)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("record the export's queue: %w", err)
	}
	_, err = f.WriteString(queueURL + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("record the export's queue in %s: %w", p, err)
	}
	return nil
}

// Source is the queue URL the export that left FILE.partial read, as
// FILE.partial.source or its lines record it ("": not recorded, an export
// of an older build).
func (e *File) Source() string { return e.source }

// SameQueue reports whether two queue URLs name one queue: the same
// account and name (the path), whatever endpoint reached it.
func SameQueue(a, b string) bool {
	pa, pb := a, b
	if u, err := url.Parse(a); err == nil && u.Path != "" {
		pa = u.Path
	}
	if u, err := url.Parse(b); err == nil && u.Path != "" {
		pb = u.Path
	}
	return strings.TrimSuffix(pa, "/") == strings.TrimSuffix(pb, "/")
}
