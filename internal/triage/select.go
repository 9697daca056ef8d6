package triage

// SelectArgs are the dla selection flags that select exactly g's objects
// within a selection that already names the archive and its area: its
// first and last date (one --date when they are one), --include-legacy
// when some of them are outside date folders (and includeLegacy does not
// say so already), and its --error-class.
func SelectArgs(g *Group, includeLegacy bool) []string {
	var words []string
	switch {
	case g.FirstDate != "" && g.FirstDate == g.LastDate:
		words = append(words, "--date", g.FirstDate)
	case g.FirstDate != "":
		words = append(words, "--from", g.FirstDate, "--to", g.LastDate)
	}
	if g.Legacy && !includeLegacy {
		words = append(words, "--include-legacy")
	}
	return append(words, "--error-class", g.Class)
}
