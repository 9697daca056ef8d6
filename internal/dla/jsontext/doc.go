// Package jsontext is the JSON machinery under the archive decoder (package
// dla) and the recovery's writers: no archive, record or Cumulus concept
// lives here.
//
//   - scan.go: a validating scanner with exactly gjson.Valid's rules (no
//     UTF-8 check, gjson's number grammar, white space of space, tab, CR
//     and LF only) and gjson's string unescaping, that finds the end of a
//     plain string run a word (8 bytes) at a time; its object and array
//     walk is exported so that a scanner built on it records what it needs
//     in the same pass;
//   - tape.go: Tape, one pass over a text that records every member and
//     element down to a chosen depth, so that a few fields are found
//     without walking the text again;
//   - depth.go: MaxDepth, the nesting bound of every JSON text the tools
//     parse, and TooDeep, which checks it without recursing;
//   - stringify.go: JavaScript's JSON.stringify(JSON.parse(text)), byte for
//     byte, for objects written as Cumulus (a Node.js program) writes them.
//
// Nothing here panics on hostile input, and nothing recurses more than
// MaxDepth levels.
package jsontext
