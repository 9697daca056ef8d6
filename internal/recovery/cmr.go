package recovery

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
)

// CMR temporal values (getGranuleTemporalInfo and getGranuleCmrTemporalInfo
// of Cumulus v21).

// temporal is the four CMR values; a nil field is undefined (left out of
// the write), a pointer to "" is null.
type temporal struct {
	beginning, ending, production, lastUpdate *string
}

func (t temporal) empty() bool {
	return t.beginning == nil && t.ending == nil && t.production == nil && t.lastUpdate == nil
}

// cmrFile returns the first CMR file of a message granule's files: the name
// (key, name or filename) ends with cmr.xml, cmr.json or cmr_iso.xml.
func cmrFile(files gjson.Result) (gjson.Result, string, bool) {
	var found gjson.Result
	var kind string
	files.ForEach(func(_, f gjson.Result) bool {
		name := ""
		for _, k := range []string{"key", "name", "filename"} {
			if v := f.Get(k); truthy(v) {
				name = jsString(v)
				break
			}
		}
		switch {
		case strings.HasSuffix(name, "cmr.xml"):
			kind = "echo10"
		case strings.HasSuffix(name, "cmr.json"):
			kind = "ummg"
		case strings.HasSuffix(name, "cmr_iso.xml"):
			kind = "iso"
		default:
			return true
		}
		found = f
		return false
	})
	return found, kind, kind != ""
}

// s3URLOfFile is getS3UrlOfFile: filename, or bucket + filepath, or bucket + key.
func s3URLOfFile(f gjson.Result) (bucket, key string, err error) {
	if v := f.Get("filename"); truthy(v) {
		b, k, ok := parseS3URL(jsString(v))
		if !ok {
			return "", "", fmt.Errorf("CMR file %q is not an s3:// URL", jsString(v))
		}
		return b, k, nil
	}
	b := f.Get("bucket")
	if truthy(b) && truthy(f.Get("filepath")) {
		return jsString(b), jsString(f.Get("filepath")), nil
	}
	if truthy(b) && truthy(f.Get("key")) {
		return jsString(b), jsString(f.Get("key")), nil
	}
	return "", "", fmt.Errorf("Unable to determine location of file: %s", compact(f.Raw))
}

func parseS3URL(u string) (bucket, key string, ok bool) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", false
	}
	bucket, key, _ = strings.Cut(rest, "/")
	return bucket, key, bucket != ""
}

// granuleTemporal reads the granule's CMR file. A missing file gives an
// empty result; a file S3 refuses (ErrRefused) or that cannot be parsed is
// the granule's error; any other read failure is transient.
func granuleTemporal(ctx context.Context, files gjson.Result, objs Objects) (temporal, error) {
	if objs == nil {
		return temporal{}, nil
	}
	f, kind, ok := cmrFile(files)
	if !ok {
		return temporal{}, nil
	}
	bucket, key, err := s3URLOfFile(f)
	if err != nil {
		// v21 finds no CMR file here either (and writes no CMR dates).
		return temporal{}, nil
	}
	body, err := objs.GetObject(ctx, bucket, key)
	switch {
	case err == nil:
	case errors.Is(err, ErrNotFound):
		return temporal{}, nil
	case errors.Is(err, ErrRefused):
		// v21: a CMR file that cannot be read rejects the granule.
		return temporal{}, fmt.Errorf("reading CMR file s3://%s/%s: %w", bucket, key, err)
	default:
		return temporal{}, &TransientError{Err: fmt.Errorf("reading CMR file s3://%s/%s: %w", bucket, key, err)}
	}
	var t temporal
	switch kind {
	case "ummg":
		t, err = ummgTemporal(body)
	case "echo10":
		t, err = echo10Temporal(body)
	default:
		t, err = isoTemporal(body)
	}
	if err != nil {
		return temporal{}, fmt.Errorf("CMR file s3://%s/%s: %w", bucket, key, err)
	}
	return t, nil
}

func strAt(v gjson.Result) *string {
	if isNil(v) {
		return nil
	}
	s := jsString(v)
	return &s
}

func firstTruthy(vs ...gjson.Result) gjson.Result {
	for _, v := range vs {
		if truthy(v) {
			return v
		}
	}
	return gjson.Result{}
}

// ummgTemporal: RangeDateTime, else SingleDateTime; the production date;
// the first ProviderDates entry of type Update, else Insert, else Create.
// v21 throws when ProviderDates is absent; here lastUpdate is then left out.
func ummgTemporal(body []byte) (temporal, error) {
	if !jsontext.ValidBytes(body) {
		if jsontext.TooDeepBytes(body) {
			return temporal{}, fmt.Errorf("SyntaxError: UMM-G JSON is nested deeper than %d levels", jsontext.MaxDepth)
		}
		return temporal{}, errors.New("SyntaxError: UMM-G JSON is not valid JSON")
	}
	m := gjson.ParseBytes(body)
	var t temporal
	begin := m.Get("TemporalExtent.RangeDateTime.BeginningDateTime")
	if truthy(begin) {
		t.beginning, t.ending = strAt(begin), strAt(m.Get("TemporalExtent.RangeDateTime.EndingDateTime"))
	} else {
		single := m.Get("TemporalExtent.SingleDateTime")
		t.beginning, t.ending = strAt(single), strAt(single)
	}
	t.production = strAt(m.Get("DataGranule.ProductionDateTime"))
	dates := m.Get("ProviderDates")
	for _, typ := range []string{"Update", "Insert", "Create"} {
		var hit gjson.Result
		dates.ForEach(func(_, d gjson.Result) bool {
			if d.Get("Type").String() == typ {
				hit = d
				return false
			}
			return true
		})
		if hit.Exists() {
			t.lastUpdate = strAt(hit.Get("Date"))
			break
		}
	}
	return t, nil
}

// xnode is an XML element as xml2js (explicitArray false, attributes
// ignored) sees it: text, and children by local name.
type xnode struct {
	text     string
	children map[string][]*xnode
}

func (n *xnode) child(name string) *xnode {
	if n == nil || len(n.children[name]) == 0 {
		return nil
	}
	return n.children[name][0]
}

func (n *xnode) path(names ...string) *xnode {
	for _, name := range names {
		n = n.child(name)
	}
	return n
}

func (n *xnode) value() *string {
	if n == nil {
		return nil
	}
	s := strings.TrimSpace(n.text)
	return &s
}

func parseXML(body []byte) (*xnode, error) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = true
	root := &xnode{children: map[string][]*xnode{}}
	stack := []*xnode{root}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("XML: %w", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &xnode{children: map[string][]*xnode{}}
			top := stack[len(stack)-1]
			top.children[tk.Name.Local] = append(top.children[tk.Name.Local], n)
			if stack = append(stack, n); len(stack) > jsontext.MaxDepth+1 {
				return nil, fmt.Errorf("XML: elements nested deeper than %d levels", jsontext.MaxDepth)
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			stack[len(stack)-1].text += string(tk)
		}
	}
	if len(root.children) == 0 {
		return nil, errors.New("XML: no root element")
	}
	return root, nil
}

func echo10Temporal(body []byte) (temporal, error) {
	root, err := parseXML(body)
	if err != nil {
		return temporal{}, err
	}
	g := root.child("Granule")
	if g == nil {
		return temporal{}, errors.New("ECHO10 XML has no Granule root")
	}
	var t temporal
	rng := g.path("Temporal", "RangeDateTime")
	if b := rng.child("BeginningDateTime").value(); b != nil && *b != "" {
		t.beginning, t.ending = b, rng.child("EndingDateTime").value()
	} else {
		s := g.path("Temporal", "SingleDateTime").value()
		t.beginning, t.ending = s, s
	}
	t.production = g.path("DataGranule", "ProductionDateTime").value()
	t.lastUpdate = g.child("LastUpdate").value()
	if t.lastUpdate == nil || *t.lastUpdate == "" {
		t.lastUpdate = g.child("InsertTime").value()
	}
	return t, nil
}

// isoTemporal reads ISO 19115 (cmr_iso.xml). v21 assumes more than one
// identificationInfo element and crashes on one; both work here.
func isoTemporal(body []byte) (temporal, error) {
	root, err := parseXML(body)
	if err != nil {
		return temporal{}, err
	}
	md := root.path("DS_Series", "composedOf", "DS_DataSet", "has", "MI_Metadata")
	if md == nil {
		return temporal{}, errors.New("ISO XML has no DS_Series/composedOf/DS_DataSet/has/MI_Metadata")
	}
	var t temporal
	infos := md.children["identificationInfo"]
	for _, info := range infos {
		di := info.child("MD_DataIdentification")
		if di.child("extent") == nil {
			continue
		}
		te := di.path("extent", "EX_Extent", "temporalElement", "EX_TemporalExtent", "extent")
		if b := te.path("TimePeriod", "beginPosition").value(); b != nil && *b != "" {
			t.beginning, t.ending = b, te.path("TimePeriod", "endPosition").value()
		} else {
			s := te.path("TimeInstant", "timePosition").value()
			t.beginning, t.ending = s, s
		}
		break
	}
	t.production = md.path("dataQualityInfo", "DQ_DataQuality", "lineage", "LI_Lineage", "processStep", "LE_ProcessStep", "dateTime", "DateTime").value()
	for _, info := range infos {
		cit := info.path("MD_DataIdentification", "citation", "CI_Citation")
		if v := cit.path("title", "CharacterString").value(); v != nil && *v == "UpdateTime" {
			t.lastUpdate = cit.path("date", "CI_Date", "date", "DateTime").value()
			break
		}
	}
	return t, nil
}

// temporalFields is getGranuleCmrTemporalInfo: with no CMR values, the
// message granule's own four fields verbatim; otherwise each value as an
// ISO date ("" → null). An unparseable date is an error, as in v21.
func temporalFields(t temporal, granule Getter) ([4]gjson.Result, error) {
	var out [4]gjson.Result
	if t.empty() {
		for i, k := range []string{"beginningDateTime", "endingDateTime", "productionDateTime", "lastUpdateDateTime"} {
			out[i] = granule.Get(k)
		}
		return out, nil
	}
	for i, v := range []*string{t.beginning, t.ending, t.production, t.lastUpdate} {
		switch {
		case v == nil:
		case *v == "":
			out[i] = gjson.Parse("null")
		default:
			d, ok := parseDate(gjson.Result{Type: gjson.String, Str: *v})
			if !ok {
				return out, fmt.Errorf("RangeError: Invalid time value %q in the CMR metadata", *v)
			}
			b, _ := json.Marshal(isoMillis(d))
			out[i] = gjson.ParseBytes(b)
		}
	}
	return out, nil
}
