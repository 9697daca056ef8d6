package recovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func deref(p *string) string {
	if p == nil {
		return "<undefined>"
	}
	return *p
}

func (t temporal) String() string {
	return strings.Join([]string{deref(t.beginning), deref(t.ending), deref(t.production), deref(t.lastUpdate)}, " | ")
}

func TestUMMGTemporal(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"range, Update before Insert",
			`{"TemporalExtent":{"RangeDateTime":{"BeginningDateTime":"2024-01-01T00:00:00Z","EndingDateTime":"2024-01-01T00:05:00Z"}},
			  "DataGranule":{"ProductionDateTime":"2024-01-02T00:00:00Z"},
			  "ProviderDates":[{"Type":"Insert","Date":"2024-01-03T00:00:00Z"},{"Type":"Update","Date":"2024-01-04T00:00:00Z"}]}`,
			"2024-01-01T00:00:00Z | 2024-01-01T00:05:00Z | 2024-01-02T00:00:00Z | 2024-01-04T00:00:00Z"},
		{"single date time, Create only",
			`{"TemporalExtent":{"SingleDateTime":"2024-05-05T10:00:00Z"},"ProviderDates":[{"Type":"Create","Date":"2024-05-06T00:00:00Z"}]}`,
			"2024-05-05T10:00:00Z | 2024-05-05T10:00:00Z | <undefined> | 2024-05-06T00:00:00Z"},
		// v21 throws on a granule without ProviderDates; its dates are kept here.
		{"no ProviderDates",
			`{"TemporalExtent":{"RangeDateTime":{"BeginningDateTime":"2024-01-01T00:00:00Z","EndingDateTime":"2024-01-01T00:05:00Z"}}}`,
			"2024-01-01T00:00:00Z | 2024-01-01T00:05:00Z | <undefined> | <undefined>"},
		{"no temporal extent at all", `{}`, "<undefined> | <undefined> | <undefined> | <undefined>"},
	}
	for _, c := range cases {
		got, err := ummgTemporal([]byte(c.body))
		if err != nil || got.String() != c.want {
			t.Errorf("%s: %s (%v), want %s", c.name, got, err, c.want)
		}
	}
	if _, err := ummgTemporal([]byte(`{"TemporalExtent":`)); err == nil {
		t.Error("truncated UMM-G JSON gave no error")
	}
}

func TestECHO10Temporal(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"range and LastUpdate", `<?xml version="1.0"?><Granule><InsertTime>2024-01-03T00:00:00Z</InsertTime><LastUpdate>2024-01-04T00:00:00Z</LastUpdate>
			<Temporal><RangeDateTime><BeginningDateTime>2024-01-01T00:00:00Z</BeginningDateTime><EndingDateTime>2024-01-01T00:05:00Z</EndingDateTime></RangeDateTime></Temporal>
			<DataGranule><ProductionDateTime> 2024-01-02T00:00:00Z </ProductionDateTime></DataGranule></Granule>`,
			"2024-01-01T00:00:00Z | 2024-01-01T00:05:00Z | 2024-01-02T00:00:00Z | 2024-01-04T00:00:00Z"},
		{"single date time, InsertTime when no LastUpdate", `<Granule><InsertTime>2024-01-03T00:00:00Z</InsertTime>
			<Temporal><SingleDateTime>2024-02-02T00:00:00Z</SingleDateTime></Temporal></Granule>`,
			"2024-02-02T00:00:00Z | 2024-02-02T00:00:00Z | <undefined> | 2024-01-03T00:00:00Z"},
	}
	for _, c := range cases {
		got, err := echo10Temporal([]byte(c.body))
		if err != nil || got.String() != c.want {
			t.Errorf("%s: %s (%v), want %s", c.name, got, err, c.want)
		}
	}
	for _, bad := range []string{`<Collection></Collection>`, `<Granule><Temporal>`, ``} {
		if _, err := echo10Temporal([]byte(bad)); err == nil {
			t.Errorf("%q gave no error", bad)
		}
	}
}

const isoHead = `<?xml version="1.0"?><gmd:DS_Series xmlns:gmd="http://www.isotc211.org/2005/gmd" xmlns:gco="http://www.isotc211.org/2005/gco" xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:gmi="http://www.isotc211.org/2005/gmi">
<gmd:composedOf><gmd:DS_DataSet><gmd:has><gmi:MI_Metadata>`
const isoTail = `<gmd:dataQualityInfo><gmd:DQ_DataQuality><gmd:lineage><gmd:LI_Lineage><gmd:processStep><gmi:LE_ProcessStep><gmd:dateTime>
<gco:DateTime>2024-01-02T00:00:00Z</gco:DateTime></gmd:dateTime></gmi:LE_ProcessStep></gmd:processStep></gmd:LI_Lineage></gmd:lineage></gmd:DQ_DataQuality></gmd:dataQualityInfo>
</gmi:MI_Metadata></gmd:has></gmd:DS_DataSet></gmd:composedOf></gmd:DS_Series>`

const isoExtent = `<gmd:identificationInfo><gmd:MD_DataIdentification><gmd:extent><gmd:EX_Extent><gmd:temporalElement><gmd:EX_TemporalExtent><gmd:extent>
<gml:TimePeriod><gml:beginPosition>2024-01-01T00:00:00Z</gml:beginPosition><gml:endPosition>2024-01-01T00:05:00Z</gml:endPosition></gml:TimePeriod>
</gmd:extent></gmd:EX_TemporalExtent></gmd:temporalElement></gmd:EX_Extent></gmd:extent></gmd:MD_DataIdentification></gmd:identificationInfo>`

const isoUpdate = `<gmd:identificationInfo><gmd:MD_DataIdentification><gmd:citation><gmd:CI_Citation><gmd:title><gco:CharacterString>UpdateTime</gco:CharacterString></gmd:title>
<gmd:date><gmd:CI_Date><gmd:date><gco:DateTime>2024-01-04T00:00:00Z</gco:DateTime></gmd:date></gmd:CI_Date></gmd:date></gmd:CI_Citation></gmd:citation></gmd:MD_DataIdentification></gmd:identificationInfo>`

func TestISOTemporal(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"two identificationInfo (the shape v21 expects)", isoHead + isoUpdate + isoExtent + isoTail,
			"2024-01-01T00:00:00Z | 2024-01-01T00:05:00Z | 2024-01-02T00:00:00Z | 2024-01-04T00:00:00Z"},
		// v21 indexes identificationInfo as an array and crashes on one element.
		{"one identificationInfo", isoHead + isoExtent + isoTail,
			"2024-01-01T00:00:00Z | 2024-01-01T00:05:00Z | 2024-01-02T00:00:00Z | <undefined>"},
		{"time instant", isoHead + strings.Replace(isoExtent,
			`<gml:TimePeriod><gml:beginPosition>2024-01-01T00:00:00Z</gml:beginPosition><gml:endPosition>2024-01-01T00:05:00Z</gml:endPosition></gml:TimePeriod>`,
			`<gml:TimeInstant><gml:timePosition>2024-03-03T00:00:00Z</gml:timePosition></gml:TimeInstant>`, 1) + isoTail,
			"2024-03-03T00:00:00Z | 2024-03-03T00:00:00Z | 2024-01-02T00:00:00Z | <undefined>"},
	}
	for _, c := range cases {
		got, err := isoTemporal([]byte(c.body))
		if err != nil || got.String() != c.want {
			t.Errorf("%s: %s (%v), want %s", c.name, got, err, c.want)
		}
	}
	if _, err := isoTemporal([]byte(`<gmd:DS_Series xmlns:gmd="x"></gmd:DS_Series>`)); err == nil {
		t.Error("ISO without MI_Metadata gave no error")
	}
}

func TestTemporalFields(t *testing.T) {
	g := gjson.Parse(`{"beginningDateTime":"as given","endingDateTime":null}`)
	out, err := temporalFields(temporal{}, g)
	if err != nil || out[0].Raw != `"as given"` || out[1].Raw != "null" || out[2].Exists() {
		t.Errorf("without CMR values the granule's own fields: %v %v", out, err)
	}
	empty, date := "", "2024-01-01T00:00:00Z"
	out, err = temporalFields(temporal{beginning: &date, ending: &empty}, g)
	if err != nil || out[0].Raw != `"2024-01-01T00:00:00.000Z"` || out[1].Raw != "null" || out[2].Exists() {
		t.Errorf("CMR values: %v %v", out, err)
	}
	bad := "not a date"
	if _, err := temporalFields(temporal{beginning: &bad}, g); err == nil || !strings.Contains(err.Error(), "Invalid time value") {
		t.Errorf("an invalid CMR date: %v", err)
	}
}

// objectsFake serves S3 objects from a map; sizes are the body lengths.
type objectsFake map[string]string

func (o objectsFake) GetObject(_ context.Context, bucket, key string) ([]byte, error) {
	b, ok := o["s3://"+bucket+"/"+key]
	if !ok {
		return nil, ErrNotFound
	}
	return []byte(b), nil
}

func (o objectsFake) ObjectSize(ctx context.Context, bucket, key string) (int64, error) {
	b, err := o.GetObject(ctx, bucket, key)
	return int64(len(b)), err
}

// SystemBucket: the fakes' system bucket is "sys".
func (o objectsFake) SystemBucket() string { return "sys" }

// objectsFailing fails every read with err and counts the reads.
type objectsFailing struct {
	sys   string
	err   error
	reads *int
}

func (o objectsFailing) GetObject(context.Context, string, string) ([]byte, error) {
	*o.reads++
	return nil, o.err
}

func (o objectsFailing) ObjectSize(context.Context, string, string) (int64, error) {
	*o.reads++
	return 0, o.err
}

func (o objectsFailing) SystemBucket() string { return o.sys }

// refusedErr is what awsread returns for an S3 answer about the object.
var refusedErr = fmt.Errorf("%w: AccessDenied: Access Denied (HTTP 403)", ErrRefused)

// A CMR file S3 refuses fails the granule (v21 rejects it); any other read
// failure (throttling, 5xx, no credentials) is transient and stops the run.
func TestGranuleTemporalSortsReadErrors(t *testing.T) {
	files := gjson.Parse(`[{"bucket":"b","key":"g.cmr.json"}]`)
	n := 0
	_, err := granuleTemporal(context.Background(), files, objectsFailing{err: refusedErr, reads: &n})
	if err == nil || IsTransient(err) || !strings.Contains(err.Error(), "reading CMR file s3://b/g.cmr.json: refused: AccessDenied") {
		t.Errorf("refused CMR file: %v (transient %v), want the granule's failure", err, IsTransient(err))
	}
	_, err = granuleTemporal(context.Background(), files, objectsFailing{err: errors.New("SlowDown (HTTP 503)"), reads: &n})
	if !IsTransient(err) {
		t.Errorf("throttled CMR read: %v, want transient", err)
	}
	if n != 2 {
		t.Errorf("%d reads, want 2", n)
	}
}

func TestGranuleTemporalPicksTheFirstCMRFile(t *testing.T) {
	objs := objectsFake{
		"s3://b/g.cmr.json": `{"TemporalExtent":{"SingleDateTime":"2024-05-05T10:00:00Z"}}`,
		"s3://b/g.cmr.xml":  `<Granule><Temporal><SingleDateTime>2020-01-01T00:00:00Z</SingleDateTime></Temporal></Granule>`,
	}
	files := gjson.Parse(`[{"bucket":"b","key":"g.hdf"},{"bucket":"b","key":"g.cmr.json"},{"bucket":"b","key":"g.cmr.xml"}]`)
	got, err := granuleTemporal(context.Background(), files, objs)
	if err != nil || deref(got.beginning) != "2024-05-05T10:00:00Z" {
		t.Errorf("%s %v, want the cmr.json dates", got, err)
	}
	// A CMR file that is gone gives no dates (as v21), not a failure.
	got, err = granuleTemporal(context.Background(), gjson.Parse(`[{"bucket":"b","key":"gone.cmr.xml"}]`), objs)
	if err != nil || !got.empty() {
		t.Errorf("missing CMR file: %s %v", got, err)
	}
	// Offline: no reader, no dates.
	if got, err = granuleTemporal(context.Background(), files, nil); err != nil || !got.empty() {
		t.Errorf("no reader: %s %v", got, err)
	}
}
