package triage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
)

// Record kinds a fix-first message may need.
const (
	KindCollection     = "collection"
	KindProvider       = "provider"
	KindExecution      = "execution"
	KindAsyncOperation = "async operation"
	KindPDR            = "pdr"
	KindGranule        = "granule"
)

// Need is one record a message needs: its kind and natural key, the
// whole key the message gives (a collection as name___version).
type Need struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// CollectionCumulusID is the rest of a granule's key when the message
	// gives it (Cumulus looks a granule up by granule_id and
	// collection_cumulus_id): the granule must exist in that collection.
	CollectionCumulusID string `json:"collection_cumulus_id,omitempty"`
}

func (n Need) String() string { return n.Kind + " " + n.label() }

// label is the need's name as printed, with the rest of its key.
func (n Need) label() string {
	if n.CollectionCumulusID != "" {
		return n.Name + " (collection_cumulus_id " + n.CollectionCumulusID + ")"
	}
	return n.Name
}

// Group is the objects of one error class: what triage prints a line for.
type Group struct {
	Class      string // dla.ErrorClass; "" for no error text
	Unreadable bool   // the objects could not be read or decoded
	Rule       Rule
	Count      int
	FirstDate  string
	LastDate   string
	// Legacy: some objects are outside date folders (their date is their
	// event time), so the command needs --include-legacy.
	Legacy      bool
	Collections map[string]int
	ExampleKey  string
	// Needs are the records the group's messages name as needed (for
	// NeedsReferences, every reference: which one is missing is what the
	// database says), by how many messages.
	Needs map[Need]int
	// NoProvider counts the messages of a pdr-provider group that name no
	// provider: those never succeed as they are.
	NoProvider int
	// OddKeys: a key of the group cannot be listed one per line.
	OddKeys bool

	// per message (or N alike), the needs (for readiness)
	messages []weighted

	// Sample is up to Triage.ProbeSize of the group's keys (the first by
	// key), for a probe; Probe is its result once run.
	Sample []string
	Probe  *Probe

	// Readiness, once checked against a database.
	Checked bool
	Missing map[Need]bool // of Needs, those the database does not have
	Ready   int           // messages whose every need exists now
	// NotChecked is why readiness was not checked, as the verdict says it
	// ("" for "no database given").
	NotChecked string
}

type weighted struct {
	needs []Need
	n     int
}

// Probe is what recover's dry run did with a group's sample: how many
// objects it tried, how many it would write now, and the error classes of
// the others.
type Probe struct {
	Tried   int            `json:"tried"`
	Written int            `json:"would_write"`
	Failed  map[string]int `json:"failed"` // by error class
}

// Triage accumulates the groups of one pass over a selection.
type Triage struct {
	groups map[string]*Group
	Total  int
	// ProbeSize is how many keys of each group are kept for a probe.
	ProbeSize int
	// OddKey, when set, says a key cannot be listed one per line (it holds
	// a newline...): a group with one is listed with NUL-ended keys.
	OddKey func(key string) bool
}

// New starts a triage.
func New() *Triage { return &Triage{groups: map[string]*Group{}} }

func (t *Triage) group(key, class string, unreadable bool, rule Rule) *Group {
	g := t.groups[key]
	if g == nil {
		g = &Group{Class: class, Unreadable: unreadable, Rule: rule, Collections: map[string]int{}, Needs: map[Need]int{}}
		t.groups[key] = g
	}
	return g
}

func (g *Group) add(key, date string, legacy bool, n, sample int) {
	g.Count += n
	if sample > 0 && key != "" {
		i, found := slices.BinarySearch(g.Sample, key)
		if !found && i < sample {
			g.Sample = slices.Insert(g.Sample, i, key)
			if len(g.Sample) > sample {
				g.Sample = g.Sample[:sample]
			}
		}
	}
	if g.ExampleKey == "" || key < g.ExampleKey {
		g.ExampleKey = key
	}
	if date != "" {
		if g.FirstDate == "" || date < g.FirstDate {
			g.FirstDate = date
		}
		if date > g.LastDate {
			g.LastDate = date
		}
	}
	g.Legacy = g.Legacy || legacy
}

// Add counts one decoded object.
func (t *Triage) Add(d *dla.Decoded) { t.AddClassed(d, dla.ErrorClass(d.Error)) }

// AddClassed is Add for an object whose dla.ErrorClass the caller has
// already computed (dla report, which groups by it too).
func (t *Triage) AddClassed(d *dla.Decoded, class string) {
	t.add(Counted{Key: d.Key, Date: d.Date(), Legacy: d.Partition == "", Error: d.Error,
		Collection: d.CollectionID, Provider: d.ProviderID, Message: d.Message, N: 1}, class)
}

// Counted is N objects alike in what triage reads of them: a row of an
// Athena query grouped by error, collection, provider and date, or one
// decoded object (N 1).
type Counted struct {
	Key        string // an example (the first by key)
	Date       string
	Legacy     bool
	Error      string
	Collection string
	Provider   string
	Message    string // the Cumulus message, when read ("" from Athena)
	N          int
}

// AddCounted counts N objects alike.
func (t *Triage) AddCounted(c Counted) { t.add(c, dla.ErrorClass(c.Error)) }

// add counts N objects alike whose error class is class.
func (t *Triage) add(c Counted, class string) {
	t.Total += c.N
	rule := ClassifyDLA(class)
	g := t.group("e:"+class, class, false, rule)
	g.add(c.Key, c.Date, c.Legacy, c.N, t.ProbeSize)
	if t.OddKey != nil && !g.OddKeys && t.OddKey(c.Key) {
		g.OddKeys = true
	}
	if c.Collection != "" {
		g.Collections[c.Collection] += c.N
	}
	needs := needsOf(rule, c)
	if rule.Needs == NeedsProvider && len(needs) == 0 {
		g.NoProvider += c.N
	}
	for _, n := range needs {
		g.Needs[n] += c.N
	}
	if rule.Class == FixFirst {
		g.messages = append(g.messages, weighted{needs, c.N})
	}
}

// AddUnreadable counts an object that could not be read or decoded.
func (t *Triage) AddUnreadable(key, date string) {
	t.Total++
	g := t.group("u:", "", true, UnreadableRule)
	g.add(key, date, date == "", 1, 0)
}

// Groups are the groups, the largest first (then by class).
func (t *Triage) Groups() []*Group {
	out := make([]*Group, 0, len(t.groups))
	for _, g := range t.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *Group) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Class, b.Class), cmp.Compare(boolInt(a.Unreadable), boolInt(b.Unreadable)))
	})
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// recordInTable is Cumulus's RecordDoesNotExist text.
var recordInTable = regexp.MustCompile(`Record in (\w+) with identifiers (\{[^{}]*\}) does not exist`)

var tableKinds = map[string]string{
	"providers": KindProvider, "collections": KindCollection, "executions": KindExecution, "pdrs": KindPDR,
	"granules": KindGranule, "async_operations": KindAsyncOperation,
}

// needsOf is what one message needs, by its rule.
func needsOf(rule Rule, d Counted) []Need {
	var out []Need
	addNeed := func(n Need) {
		if n.Name != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	add := func(kind, name string) { addNeed(Need{Kind: kind, Name: name}) }
	switch rule.Needs {
	case NeedsReferences:
		coll := d.Collection
		if coll == "" {
			c := gjson.Get(d.Message, "meta.collection")
			if n, v := c.Get("name").String(), c.Get("version").String(); n != "" && v != "" {
				coll = n + "___" + v
			}
		}
		add(KindCollection, coll)
		add(KindAsyncOperation, gjson.Get(d.Message, "cumulus_meta.asyncOperationId").String())
		add(KindExecution, gjson.Get(d.Message, "cumulus_meta.parentExecutionArn").String())
	case NeedsNamedRecord:
		for _, m := range recordInTable.FindAllStringSubmatch(d.Error, 16) {
			kind, ok := tableKinds[m[1]]
			if !ok {
				kind = m[1]
			}
			addNeed(identifiedNeed(kind, m[2]))
		}
	case NeedsProvider:
		p := d.Provider
		if p == "" {
			p = gjson.Get(d.Message, "meta.provider.id").String()
		}
		add(KindProvider, p)
	}
	return out
}

// identifiedNeed is the record Cumulus's identifiers object names, keyed
// by all of the key it gives: a collection by name and version
// (name___version, as the lookup takes it), a granule by granule_id and,
// when given, collection_cumulus_id; the others by their name, arn or
// id. An object it cannot read is kept as written.
func identifiedNeed(kind, ids string) Need {
	dec := json.NewDecoder(strings.NewReader(ids))
	dec.UseNumber() // a cumulus_id stays as written (no 1e+06)
	var m map[string]any
	if dec.Decode(&m) != nil {
		return Need{Kind: kind, Name: ids}
	}
	str := func(k string) string {
		if v, ok := m[k]; ok && v != nil {
			return fmt.Sprint(v)
		}
		return ""
	}
	switch name, version := str("name"), str("version"); {
	case kind == KindCollection && name != "" && version != "":
		return Need{Kind: kind, Name: name + "___" + version}
	case kind == KindGranule && str("granule_id") != "":
		return Need{Kind: kind, Name: str("granule_id"), CollectionCumulusID: str("collection_cumulus_id")}
	}
	for _, k := range []string{"name", "arn", "granule_id", "id"} {
		if v := str(k); v != "" {
			return Need{Kind: kind, Name: v}
		}
	}
	return Need{Kind: kind, Name: ids}
}

// Lookup says whether a record exists now, by its whole key
// (cumulusdb.Exists, and a granule's collection_cumulus_id).
type Lookup func(ctx context.Context, n Need) (bool, error)

// CheckReadiness asks the database, once per distinct need, whether the
// fix-first groups' records exist now, and counts the messages whose every
// need does.
//
// On an error no group is marked checked: a lookup that failed half way
// leaves the triage as it was, whose verdicts say readiness was not
// checked (NotChecked).
func (t *Triage) CheckReadiness(ctx context.Context, exists Lookup) error {
	known := map[Need]bool{}
	for _, g := range t.groups {
		if g.Rule.Class != FixFirst {
			continue
		}
		for n := range g.Needs {
			if _, seen := known[n]; !seen {
				ok, err := exists(ctx, n)
				if err != nil {
					return err
				}
				known[n] = ok
			}
		}
	}
	for _, g := range t.groups {
		if g.Rule.Class != FixFirst {
			continue
		}
		g.Checked, g.Missing, g.Ready = true, map[Need]bool{}, 0
		for n := range g.Needs {
			if !known[n] {
				g.Missing[n] = true
			}
		}
		for _, m := range g.messages {
			ready := len(m.needs) > 0
			for _, n := range m.needs {
				ready = ready && !g.Missing[n]
			}
			if ready {
				g.Ready += m.n
			}
		}
	}
	return nil
}

// NotCheckedBecause records why readiness could not be checked (the
// database could not be reached): the fix-first groups' verdicts say so.
func (t *Triage) NotCheckedBecause(why string) {
	for _, g := range t.groups {
		g.NotChecked = why
	}
}

// Evidence is what a group's verdict follows.
type Evidence string

const (
	// FromRule: the rule table, nothing contradicting it.
	FromRule Evidence = "rule"
	// FromReadiness: the database holds every record a fix-first group
	// needs, so it is retried now.
	FromReadiness Evidence = "readiness"
	// FromProbe: recover's dry run would write objects of a group whose
	// rule says it is not retried as it is.
	FromProbe Evidence = "probe"
)

// Shown is the class of the verdict shown, and what it follows: the
// rule's class unless the database says otherwise. A fix-first group whose
// every record exists now is retried now (transient, from readiness); a
// group that is not retried as it is (permanent, unknown, fix-first and not
// ready) whose probe would write objects now is retried too (transient,
// from the probe). One verdict per group: its words, its badge, the
// summary's advice and its command all follow this class.
func (g *Group) Shown() (Class, Evidence) {
	c := g.Rule.Class
	if g.Unreadable || c == Transient {
		return c, FromRule
	}
	if p := g.Probe; p != nil && p.Written > 0 && !g.ready() {
		return Transient, FromProbe
	}
	if g.ready() {
		return Transient, FromReadiness
	}
	return c, FromRule
}

// ready says every record the fix-first group needs exists now.
func (g *Group) ready() bool {
	return g.Rule.Class == FixFirst && len(g.Needs) > 0 && g.Checked && len(g.Missing) == 0
}

// Verdict is what to do with a group, in words: "retry now", "fix
// first: …", "ready: …", "never as it is", "unknown", and what a probe
// found; "would be written now: retry" when the probe contradicts the
// rule (Shown).
func (g *Group) Verdict() string {
	if _, from := g.Shown(); from == FromProbe {
		return g.probeVerdict(100)
	}
	return g.verdict(namesShown, true) + g.probeNote(100)
}

// ShortVerdict is the verdict for one line of a terminal: at most shown
// names of each kind (then "and N more"), the probe's commonest error cut
// shorter, and without "(readiness not checked: no database given)",
// which a terminal says once for every group.
func (g *Group) ShortVerdict(shown int) string {
	if _, from := g.Shown(); from == FromProbe {
		return g.probeVerdict(40)
	}
	return g.verdict(max(shown, 1), false) + g.probeNote(40)
}

// probeVerdict is the verdict of a group whose probe would write objects
// the rule says are not retried as they are: the probe's finding first,
// then what the rule said.
func (g *Group) probeVerdict(cut int) string {
	p := g.Probe
	v := "would be written now: retry"
	if p.Written < p.Tried {
		v = "some would be written now: retry, and recover's dry run says which"
	}
	v += fmt.Sprintf(" (probe: %d of %d", p.Written, p.Tried)
	if top, n := p.commonest(); n > 0 {
		v += fmt.Sprintf("; %d: %s", n, cutRunes(top, cut))
	}
	rule := map[Class]string{Permanent: "never as it is", Unknown: "unknown", FixFirst: "fix first"}[g.Rule.Class]
	return v + "; the rule " + g.Rule.ID + " says " + rule + ")"
}

// commonest is the error class most of the probe's failures have, and how
// many.
func (p *Probe) commonest() (string, int) {
	top, n := "", 0
	for class, k := range p.Failed {
		if k > n || (k == n && class < top) {
			top, n = class, k
		}
	}
	return top, n
}

// cutRunes is s cut to cut runes, ending with "…" when cut.
func cutRunes(s string, cut int) string {
	if r := []rune(s); len(r) > cut {
		return string(r[:cut]) + "…"
	}
	return s
}

// probeNote is what a probe found ("; probe: 0 of 2 would be written now
// (2: UnmetRequirementsError: …)"), its error class cut to cut runes.
func (g *Group) probeNote(cut int) string {
	p := g.Probe
	if p == nil {
		return ""
	}
	v := fmt.Sprintf("; probe: %d of %d would be written now", p.Written, p.Tried)
	if top, n := p.commonest(); n > 0 {
		v += fmt.Sprintf(" (%d: %s)", n, cutRunes(top, cut))
	}
	return v
}

// verdict is the verdict without the probe, naming at most shown records
// of each kind; unchecked adds the readiness note to an unchecked
// fix-first group.
func (g *Group) verdict(shown int, unchecked bool) string {
	switch g.Rule.Class {
	case Transient:
		if g.Rule.DLAOnly {
			return "retry with dla recover (Cumulus's own recovery fails on it again)"
		}
		return "retry now, once the cause is gone"
	case FixFirst:
		if len(g.Needs) == 0 {
			return "never as it is: the messages name no " + string(g.Rule.Needs)
		}
		if !g.Checked {
			note := ""
			if unchecked {
				note = " (readiness not checked: " + cmp.Or(g.NotChecked, "no database given") + ")"
			}
			return "fix first: " + g.needsPhrase(shown) + note + g.noProviderNote()
		}
		if len(g.Missing) == 0 {
			return "ready: " + g.existPhrase(shown) + g.noProviderNote()
		}
		return fmt.Sprintf("fix first: %s; %d of %d ready now", g.missingPhrase(shown), g.Ready, g.Count) + g.noProviderNote()
	case Permanent:
		return "never as it is"
	}
	return "unknown: no rule; look at one before retrying"
}

// FixSteps is what to create first ("create provider LANCE_NRT"), "" for
// none.
func (g *Group) FixSteps() string {
	if c, _ := g.Shown(); c != FixFirst || len(g.Needs) == 0 {
		return ""
	}
	if g.Checked {
		return "create " + g.missingPhrase(namesShown)
	}
	if g.Rule.Needs == NeedsReferences {
		return "create the missing one of " + g.needsPhrase(namesShown)
	}
	return "create " + g.needsPhrase(namesShown)
}

// noProviderNote counts the messages that name no provider, which no fix
// of the database helps.
func (g *Group) noProviderNote() string {
	if g.NoProvider == 0 {
		return ""
	}
	return fmt.Sprintf("; %d name no provider and never succeed as they are", g.NoProvider)
}

const namesShown = 5

// names lists needs by kind ("providers LANCE_NRT, LPCLOUD"), at most
// shown of each kind, then "and N more".
func names(needs []Need, shown int) string {
	byKind := map[string][]string{}
	var kinds []string
	for _, n := range needs {
		if _, ok := byKind[n.Kind]; !ok {
			kinds = append(kinds, n.Kind)
		}
		byKind[n.Kind] = append(byKind[n.Kind], n.label())
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		v := byKind[k]
		sort.Strings(v)
		more := ""
		if len(v) > shown {
			more = fmt.Sprintf(" and %d more", len(v)-shown)
			v = v[:shown]
		}
		plural := k
		if len(v) > 1 || more != "" {
			plural += "s"
		}
		parts = append(parts, plural+" "+strings.Join(v, ", ")+more)
	}
	return strings.Join(parts, "; ")
}

func (g *Group) needList(filter func(Need) bool) []Need {
	var out []Need
	for n := range g.Needs {
		if filter == nil || filter(n) {
			out = append(out, n)
		}
	}
	return out
}

func (g *Group) needsPhrase(shown int) string { return names(g.needList(nil), shown) }

func (g *Group) missingPhrase(shown int) string {
	return names(g.needList(func(n Need) bool { return g.Missing[n] }), shown)
}

func (g *Group) existPhrase(shown int) string {
	what := names(g.needList(nil), shown)
	if len(g.Needs) == 1 {
		return "the " + what + " now exists"
	}
	return "every record named now exists (" + what + ")"
}

// SortedCollections are the group's collections, the most frequent first.
func (g *Group) SortedCollections() []string {
	out := make([]string, 0, len(g.Collections))
	for c := range g.Collections {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(g.Collections[b], g.Collections[a]), cmp.Compare(a, b))
	})
	return out
}

// SortedNeeds are the group's needs, by kind then name.
func (g *Group) SortedNeeds() []Need {
	out := g.needList(nil)
	slices.SortFunc(out, func(a, b Need) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name), cmp.Compare(a.CollectionCumulusID, b.CollectionCumulusID))
	})
	return out
}
