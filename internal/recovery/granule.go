package recovery

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// FileRow is a files row (`_generateFilePgRecords`). Nil columns are
// written as NULL: the v21 files upsert overwrites every column.
type FileRow struct {
	Bucket, Key, ChecksumType, ChecksumValue, FileName, Source, Type *string
	Size                                                             *int64
}

// GranuleRow is a granules row after translateApiGranuleToPostgresGranule;
// nil fields are not supplied and keep their value on update.
type GranuleRow struct {
	GranuleID, Status, ProducerGranuleID      string
	CollectionID                              int64
	Published                                 *bool
	Duration, TimeToArchive, TimeToProcess    *float64
	ProductVolume                             *string // decimal
	Error, QueryFields                        string  // JSON; "" = not supplied
	CmrLink                                   *string
	PdrID, ProviderID                         *int64
	Beginning, Ending, Production, LastUpdate *time.Time
	ProcessingStart, ProcessingEnd            *time.Time
	CreatedAt, Timestamp, UpdatedAt           time.Time
}

// GranuleWrite is one granule to write with its guards.
type GranuleWrite struct {
	Row         GranuleRow
	ExecutionID *int64
	// Files are written (and the granule's other files removed) after the
	// granule, only for completed/failed and when the message granule has a
	// files key.
	Files      []FileRow
	WriteFiles bool
	// WorkflowError is the message's exception (JSON), kept in the error
	// written when the files fail.
	WorkflowError string
	CollectionID  string // name___version, for errors
}

// messageContext is what writeGranulesFromMessage reads once per message.
type messageContext struct {
	provider        gjson.Result
	providerURL     string
	providerURLErr  error
	workflowError   string
	status          gjson.Result
	collectionID    string
	pdrName         gjson.Result
	queryFields     gjson.Result
	startMs         float64
	executionURL    string
	processingStart *time.Time
	processingEnd   *time.Time
	now             time.Time
	// index reads each granule and file through an index of its keys
	// (indexObject) when the message was indexed (Index found it valid).
	index bool
}

// buildURL is Cumulus's buildURL for a provider: protocol://host[:port],
// the port left out for s3 and when it is the scheme's default.
func buildURL(p gjson.Result) (string, error) {
	proto, host := p.Get("protocol"), p.Get("host")
	if !truthy(proto) {
		return "", errors.New("TypeError: protocol is required")
	}
	if !truthy(host) {
		return "", errors.New("TypeError: host is required")
	}
	u, err := url.Parse(jsString(proto) + "://" + jsString(host))
	if err != nil {
		return "", fmt.Errorf("TypeError: Invalid URL: %v", err)
	}
	if port := p.Get("port"); jsString(proto) != "s3" && truthy(port) {
		ps := jsString(port)
		def := map[string]string{"http": "80", "https": "443", "ftp": "21"}[u.Scheme]
		if ps != def {
			u.Host = u.Hostname() + ":" + ps
		}
	}
	s := u.String()
	if u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "ftp" {
		s += "/"
	}
	return s, nil
}

// urlJoin is the url-join package as buildDatabaseFiles calls it.
func urlJoin(parts ...string) string {
	var kept []string
	for i, p := range parts {
		if p == "" {
			continue
		}
		if i > 0 {
			p = strings.TrimLeft(p, "/")
		}
		if i < len(parts)-1 {
			p = strings.TrimRight(p, "/")
		}
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "/")
}

// apiFile is one file of the API granule record, in the order Cumulus
// builds it, with the values as JSON (for the schema check).
type apiFile struct {
	fields []kv
	row    FileRow
}

// buildFile is buildDatabaseFile: bucket and key (from an s3:// filename),
// checksum, fileName, source from the provider URL and path, the size
// (size, fileSize, else S3 HeadObject), keeping only the database fields.
func buildFile(ctx context.Context, f gjson.Result, providerURL string, objs Objects, index bool) (apiFile, error) {
	fi := indexObject(f, index)
	get := func(k string) gjson.Result { return fi.Get(gjsonEscape(k)) }
	bucket, key := get("bucket"), get("key")
	if fn := get("filename"); truthy(fn) {
		if b, k, ok := parseS3URL(jsString(fn)); ok {
			if !truthy(bucket) {
				bucket = gjson.Parse(jsonString(b))
			}
			if !truthy(key) {
				key = gjson.Parse(jsonString(k))
			}
		}
	}
	checksum := get("checksum")
	if !truthy(checksum) {
		if v := get("checksumValue"); truthy(v) {
			checksum = v
		}
	}
	fileName := get("fileName")
	if !truthy(fileName) {
		if v := get("name"); truthy(v) {
			fileName = v
		}
	}
	source := get("source")
	if path := get("path"); providerURL != "" && truthy(path) {
		name := ""
		if truthy(fileName) {
			name = jsString(fileName)
		}
		source = gjson.Parse(jsonString(urlJoin(providerURL, jsString(path), name)))
	}
	if truthy(source) && bucket.Type == gjson.Null && key.Type == gjson.Null && bucket.Exists() && key.Exists() {
		if b, k, ok := parseS3URL(jsString(source)); ok {
			bucket, key = gjson.Parse(jsonString(b)), gjson.Parse(jsonString(k))
		}
	}
	size := get("size")
	if !isInteger(size) {
		if fs := get("fileSize"); isInteger(fs) {
			size = fs
		} else if objs != nil && truthy(bucket) && truthy(key) {
			n, err := objs.ObjectSize(ctx, jsString(bucket), jsString(key))
			switch {
			case err == nil:
				size = gjson.Parse(strconv.FormatInt(n, 10))
			case errors.Is(err, ErrNotFound):
			default:
				if ctx.Err() != nil {
					return apiFile{}, &TransientError{Err: ctx.Err()}
				}
				// v21 logs and leaves the size unset.
			}
		}
	}
	var af apiFile
	for _, x := range []struct {
		name string
		v    gjson.Result
		col  **string
	}{
		{"bucket", bucket, &af.row.Bucket},
		{"checksum", checksum, &af.row.ChecksumValue},
		{"checksumType", get("checksumType"), &af.row.ChecksumType},
		{"createdAt", get("createdAt"), nil},
		{"fileName", fileName, &af.row.FileName},
		{"key", key, &af.row.Key},
		{"size", size, nil},
		{"source", source, &af.row.Source},
		{"type", get("type"), &af.row.Type},
		{"updatedAt", get("updatedAt"), nil},
	} {
		if isNil(x.v) {
			continue
		}
		af.fields = append(af.fields, kv{x.name, x.v.Raw})
		if x.col != nil {
			s := jsString(x.v)
			*x.col = &s
		}
	}
	if isInteger(size) {
		n := int64(size.Num)
		af.row.Size = &n
	}
	return af, nil
}

// productVolume sums the integer sizes as a big integer, as a decimal string.
func productVolume(files []apiFile) string {
	sum := new(big.Int)
	for _, f := range files {
		for _, kv := range f.fields {
			if kv.key == "size" {
				if v := gjson.Parse(kv.raw); isInteger(v) {
					b, ok := new(big.Float).SetFloat64(v.Num).Int(nil)
					if ok == big.Exact {
						sum.Add(sum, b)
					}
				}
			}
		}
	}
	return sum.String()
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// buildGranule turns one message granule into the write, as
// writeGranuleFromMessage and generateGranuleApiRecord do, up to the
// database lookups. It returns the API record's fields (for the schema
// check) with the write.
func buildGranule(ctx context.Context, granule gjson.Result, mc *messageContext, objs Objects) ([]kv, *GranuleWrite, error) {
	g := indexObject(granule, mc.index)
	files := g.Get("files")
	if files.Exists() && files.Type == gjson.Null {
		return nil, nil, &MessageError{Reason: "granule.files is null"}
	}
	var built []apiFile
	hasFiles := truthy(files)
	if hasFiles {
		if !mc.provider.Exists() || isNil(mc.provider) {
			return nil, nil, errors.New("TypeError: Cannot read properties of undefined (reading 'protocol'): the message has no meta.provider")
		}
		if mc.providerURLErr != nil {
			return nil, nil, mc.providerURLErr
		}
		var err error
		files.ForEach(func(_, f gjson.Result) bool {
			var af apiFile
			af, err = buildFile(ctx, f, mc.providerURL, objs, mc.index)
			built = append(built, af)
			return err == nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	timeToArchive, timeToPreprocess := 0.0, 0.0
	if v := g.Get("post_to_cmr_duration"); v.Exists() {
		timeToArchive = v.Float() / 1000
	}
	if v := g.Get("sync_granule_duration"); v.Exists() {
		timeToPreprocess = v.Float() / 1000
	}
	duration := float64(mc.now.UnixMilli()-int64(mc.startMs)) / 1000
	status := mc.status
	if !truthy(status) {
		status = g.Get("status")
	}
	published := g.Get("published")
	if isNil(published) {
		published = gjson.Parse("false")
	}
	createdAt := g.Get("createdAt")
	if !truthy(createdAt) {
		createdAt = gjson.Parse(num(mc.startMs))
	}
	granuleID := g.Get("granuleId")
	producer := g.Get("producerGranuleId")
	if !truthy(producer) {
		producer = granuleID
	}
	if !truthy(granuleID) {
		return nil, nil, &MessageError{Reason: "granuleId required to generate a granule record"}
	}
	if mc.collectionID == "" {
		return nil, nil, &MessageError{Reason: "collectionId required to generate a granule record"}
	}
	if isNil(mc.provider) {
		return nil, nil, errors.New("TypeError: Cannot read properties of undefined (reading 'id'): the message has no meta.provider")
	}
	t, err := granuleTemporal(ctx, files, objs)
	if err != nil {
		return nil, nil, err
	}
	temporalValues, err := temporalFields(t, g)
	if err != nil {
		return nil, nil, err
	}

	// The API granule record, in generateGranuleApiRecord's order.
	nowMs := strconv.FormatInt(mc.now.UnixMilli(), 10)
	var rec []kv
	add := func(name string, v gjson.Result) {
		if !isNil(v) {
			rec = append(rec, kv{name, v.Raw})
		}
	}
	raw := func(s string) gjson.Result { return gjson.Parse(s) }
	add("granuleId", granuleID)
	add("pdrName", mc.pdrName)
	add("collectionId", raw(jsonString(mc.collectionID)))
	add("status", status)
	add("provider", mc.provider.Get("id"))
	add("execution", raw(jsonString(mc.executionURL)))
	add("cmrLink", g.Get("cmrLink"))
	if hasFiles {
		parts := make([]string, len(built))
		for i, f := range built {
			parts[i] = buildObject(f.fields)
		}
		add("files", raw("["+strings.Join(parts, ",")+"]"))
	}
	add("error", raw(mc.workflowError))
	add("published", published)
	add("createdAt", createdAt)
	add("timestamp", raw(nowMs))
	add("updatedAt", raw(nowMs))
	add("duration", raw(num(duration)))
	add("producerGranuleId", producer)
	if hasFiles {
		add("productVolume", raw(jsonString(productVolume(built))))
	}
	add("timeToPreprocess", raw(num(timeToPreprocess)))
	add("timeToArchive", raw(num(timeToArchive)))
	if mc.processingStart != nil && mc.processingEnd != nil {
		add("processingStartDateTime", raw(jsonString(isoMillis(*mc.processingStart))))
		add("processingEndDateTime", raw(jsonString(isoMillis(*mc.processingEnd))))
	}
	for i, k := range []string{"beginningDateTime", "endingDateTime", "productionDateTime", "lastUpdateDateTime"} {
		add(k, temporalValues[i])
	}
	add("queryFields", mc.queryFields)

	w := &GranuleWrite{WorkflowError: mc.workflowError, CollectionID: mc.collectionID, WriteFiles: hasFiles}
	r := &w.Row
	r.GranuleID, r.Status, r.ProducerGranuleID = jsString(granuleID), jsString(status), jsString(producer)
	if published.Type == gjson.True || published.Type == gjson.False {
		b := published.Type == gjson.True
		r.Published = &b
	}
	r.Duration, r.TimeToArchive, r.TimeToProcess = &duration, &timeToArchive, &timeToPreprocess
	if hasFiles {
		pv := productVolume(built)
		r.ProductVolume = &pv
	}
	r.Error = mc.workflowError
	if mc.queryFields.IsObject() {
		r.QueryFields = mc.queryFields.Raw
	}
	if v := g.Get("cmrLink"); !isNil(v) {
		s := jsString(v)
		r.CmrLink = &s
	}
	r.ProcessingStart, r.ProcessingEnd = nil, nil
	if mc.processingStart != nil && mc.processingEnd != nil {
		r.ProcessingStart, r.ProcessingEnd = mc.processingStart, mc.processingEnd
	}
	dates := []**time.Time{&r.Beginning, &r.Ending, &r.Production, &r.LastUpdate}
	for i, v := range temporalValues {
		if isNil(v) {
			continue
		}
		if d, ok := parseDate(v); ok {
			*dates[i] = &d
		} else if v.Type == gjson.String {
			return nil, nil, fmt.Errorf("RangeError: Invalid time value %q in granule field %s", v.Str, []string{"beginningDateTime", "endingDateTime", "productionDateTime", "lastUpdateDateTime"}[i])
		}
	}
	if d, ok := parseDate(createdAt); ok {
		r.CreatedAt = d
	}
	r.Timestamp, r.UpdatedAt = mc.now, mc.now
	for _, f := range built {
		w.Files = append(w.Files, f.row)
	}
	return rec, w, nil
}
