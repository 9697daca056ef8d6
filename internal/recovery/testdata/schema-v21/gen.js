// Generates golden.json: what Cumulus v21.0.0 does with API granule records
// that fail (or pass) its granule schema. It runs v21's own recordIsValid
// (packages/api/lib/schema.js) on v21's own `granule` schema
// (packages/api/lib/schemas.js) and builds the granule's error column and
// the message's error text as _writeGranuleRecords does
// (packages/api/lib/writeRecords/write-granules.js).
//
// To regenerate (needs node and npm):
//
//   d=$(mktemp -d) && cd $d
//   npm pack @cumulus/api@21.0.0 && tar xzf cumulus-api-21.0.0.tgz
//   npm install --no-save 'ajv@^6.12.3' lodash@4   # the range package/package.json gives; 6.15.0 when generated
//   node /path/to/internal/recovery/testdata/schema-v21/gen.js $d/package \
//     > /path/to/internal/recovery/testdata/schema-v21/golden.json
//
// The Go test TestSchemaErrorMatchesV21 reads golden.json: each case's
// record, v21's error column (null when v21 writes none) and the text of
// the error the message fails with (String(err)).

'use strict';

const path = require('path');

const pkg = process.argv[2];
if (!pkg) {
  console.error('usage: node gen.js <unpacked @cumulus/api@21.0.0 package dir>');
  process.exit(2);
}
const { recordIsValid } = require(path.join(pkg, 'lib/schema.js'));
const granuleSchema = require(path.join(pkg, 'lib/schemas.js')).granule;
const fromPkg = (m) => require(require.resolve(m, { paths: [pkg] }));
const omitBy = fromPkg('lodash/omitBy');
const isNull = fromPkg('lodash/isNull');

// lib/writeRecords/write-granules.js isStatusFinalState via @cumulus/common.
const isStatusFinalState = (status) => ['completed', 'failed'].includes(status);

// The part of _writeGranuleRecords between the schema check and the throw.
function v21(apiGranuleRecord) {
  try {
    recordIsValid(omitBy(apiGranuleRecord, isNull), granuleSchema, false);
    return { errorColumn: null, messageError: null };
  } catch (thrownError) {
    if (isStatusFinalState(apiGranuleRecord.status)
      && thrownError.name === 'SchemaValidationError') {
      const originalError = apiGranuleRecord.error;
      const errors = [];
      if (originalError) {
        errors.push(originalError);
      }
      const errorObject = {
        Error: 'Failed writing granule record due to SchemaValdationError.',
        Cause: thrownError,
      };
      errors.push(errorObject);
      const errorsObject = {
        errors: JSON.stringify(errors),
      };
      const err = new Error('Granule/granule files failed schema validation and will be updated in the datastore with the error and a status of failed', { cause: thrownError });
      return { errorColumn: JSON.stringify(errorsObject), messageError: String(err) };
    }
    return { errorColumn: null, messageError: String(thrownError) };
  }
}

// A valid record, in generateGranuleApiRecord's key order.
const base = () => ({
  granuleId: 'MOD09GQ.A2024001.h10v05.061.2024003120000',
  pdrName: 'PDN.ID2401010000.PDR',
  collectionId: 'MOD09GQ___061',
  status: 'completed',
  provider: 'LPDAAC',
  execution: 'https://console.aws.amazon.com/states/home?region=us-east-1#/executions/details/arn:aws:states:us-east-1:123456789012:execution:demo-IngestGranule:abc',
  cmrLink: 'https://cmr.earthdata.nasa.gov/search/granules.json?concept_id=G1-LPDAAC',
  files: [
    {
      bucket: 'demo-protected', checksum: 'abc', checksumType: 'md5', fileName: 'a.hdf',
      key: 'MOD09GQ/a.hdf', size: 1024, source: 'https://e4ftl01.cr.usgs.gov/a.hdf', type: 'data',
    },
    {
      bucket: 'demo-public', checksum: 'def', checksumType: 'md5', fileName: 'a.jpg',
      key: 'MOD09GQ/a.jpg', size: 2048, source: 'https://e4ftl01.cr.usgs.gov/a.jpg', type: 'browse',
    },
  ],
  error: {},
  published: true,
  createdAt: 1704067200000,
  timestamp: 1704067500000,
  updatedAt: 1704067500000,
  duration: 300.123,
  producerGranuleId: 'MOD09GQ.A2024001.h10v05.061.2024003120000',
  productVolume: '3072',
  timeToPreprocess: 12.5,
  timeToArchive: 3,
  processingStartDateTime: '2024-01-01T00:00:00.000Z',
  processingEndDateTime: '2024-01-01T00:05:00.000Z',
  beginningDateTime: '2024-01-01T00:00:00.000Z',
  endingDateTime: '2024-01-01T23:59:59.000Z',
  productionDateTime: '2024-01-03T12:00:00.000Z',
  lastUpdateDateTime: '2024-01-03T12:00:00.000Z',
  queryFields: { cnm: { receivedTime: '2024-01-01T00:00:00Z' } },
});

// Each case mutates a fresh base record.
const with_ = (f) => { const r = base(); f(r); return r; };
const cases = [
  ['valid', base()],
  ['valid-no-files', with_((r) => { delete r.files; delete r.productVolume; })],
  ['valid-empty-files', with_((r) => { r.files = []; })],
  ['valid-top-level-nulls-dropped', with_((r) => { r.pdrName = null; r.cmrLink = null; })],
  ['valid-open-objects', with_((r) => { r.error = { Error: 'x', extra: [1] }; r.queryFields = { anything: true }; })],
  ['valid-whole-float', with_((r) => { r.files[0].size = 1e3; r.duration = 7; })],
  ['file-checksum-number', with_((r) => { r.files[0].checksum = 123; })],
  ['file-checksum-null', with_((r) => { r.files[0].checksum = null; })],
  ['file-size-float', with_((r) => { r.files[1].size = 10.5; })],
  ['file-size-string', with_((r) => { r.files[0].size = '1024'; })],
  ['file-createdAt-float', with_((r) => { r.files[0].createdAt = 1.5; })],
  ['file-unknown-property', with_((r) => { r.files[1].fileSize = 2048; })],
  ['file-unknown-before-bad-type', with_((r) => { r.files[0] = { zz: 1, ...r.files[0], checksum: 5 }; })],
  ['file-bad-type-in-later-file', with_((r) => { r.files[1].bucket = false; r.files[0].type = ['x']; })],
  ['file-not-object-string', with_((r) => { r.files[1] = 's3://demo-protected/a.hdf'; })],
  ['file-not-object-null', with_((r) => { r.files[0] = null; })],
  ['file-not-object-array', with_((r) => { r.files[0] = []; })],
  ['files-object', with_((r) => { r.files = { 0: r.files[0] }; })],
  ['files-string', with_((r) => { r.files = 'a.hdf'; })],
  ['top-cmrLink-number', with_((r) => { r.cmrLink = 5; })],
  ['top-published-string', with_((r) => { r.published = 'yes'; })],
  ['top-archived-string', with_((r) => { r.archived = 'no'; })],
  ['top-archived-boolean', with_((r) => { r.archived = false; })],
  ['top-duration-string', with_((r) => { r.duration = '300'; })],
  ['top-timestamp-float', with_((r) => { r.timestamp = 1704067500000.5; })],
  ['top-updatedAt-big', with_((r) => { r.updatedAt = 1e21; })],
  ['top-timeToArchive-bool', with_((r) => { r.timeToArchive = true; })],
  ['top-error-string', with_((r) => { r.error = 'boom'; })],
  ['top-error-array', with_((r) => { r.error = []; })],
  ['top-queryFields-string', with_((r) => { r.queryFields = 'q'; })],
  ['top-pdrName-object', with_((r) => { r.pdrName = { name: 'p' }; })],
  ['top-unknown-property', with_((r) => { r.foo = 'bar'; })],
  ['top-unknown-properties-order', with_((r) => { r.zeta = 1; r.alpha = 2; })],
  ['top-unknown-integer-like-key', with_((r) => { r.foo = 1; r['7'] = 2; })],
  ['top-unknown-key-needs-escaping', with_((r) => { r['a<b>&"c\'\u2028\\'] = 1; })],
  ['missing-granuleId', with_((r) => { delete r.granuleId; })],
  ['missing-producerGranuleId', with_((r) => { delete r.producerGranuleId; })],
  ['missing-updatedAt', with_((r) => { delete r.updatedAt; })],
  ['missing-status', with_((r) => { delete r.status; })],
  ['null-status', with_((r) => { r.status = null; })],
  ['status-enum', with_((r) => { r.status = 'bogus'; })],
  ['status-enum-case', with_((r) => { r.status = 'Completed'; })],
  ['status-number', with_((r) => { r.status = 5; })],
  ['running-bad-type', with_((r) => { r.status = 'running'; r.cmrLink = 5; })],
  ['queued-bad-file', with_((r) => { r.status = 'queued'; r.files[0].checksum = 1; })],
  ['failed-bad-file', with_((r) => { r.status = 'failed'; r.files[0].checksum = 1; })],
  ['with-workflow-error', with_((r) => {
    r.status = 'failed';
    r.error = { Error: 'States.TaskFailed', Cause: '{"errorMessage":"<html>503</html> & more"}' };
    r.files[0].checksum = 1;
  })],
  ['with-unknown-error-exception', with_((r) => {
    r.error = { Error: 'Unknown Error', Cause: 'None of the above' };
    r.published = 1;
  })],
  ['many-unknown-missing-and-types', with_((r) => {
    r.extra = true; delete r.updatedAt; r.files[0].checksum = 1; r.cmrLink = 2;
  })],
  ['many-missing-and-types', with_((r) => {
    delete r.updatedAt; delete r.collectionId; r.files[0].checksum = 1; r.cmrLink = 2;
  })],
  ['many-missing-late-and-early-type', with_((r) => { delete r.updatedAt; r.cmrLink = 2; })],
  ['many-missing-early-and-late-type', with_((r) => { delete r.granuleId; r.queryFields = 2; })],
  ['many-missing-two', with_((r) => { delete r.updatedAt; delete r.producerGranuleId; })],
  ['many-types-data-order-vs-schema-order', with_((r) => {
    // duration comes after cmrLink in the schema; here it comes first in the data.
    const { duration } = r; delete r.duration;
    const rest = { ...r }; Object.keys(r).forEach((k) => delete r[k]);
    Object.assign(r, { duration: String(duration) }, rest, { cmrLink: 9 });
  })],
  ['many-files-before-later-top', with_((r) => { r.files[0].size = 'x'; r.timestamp = 'y'; r.queryFields = 1; })],
  ['many-later-top-before-files', with_((r) => { r.files[0].size = 'x'; r.published = 'y'; })],
  ['many-status-enum-and-later-type', with_((r) => { r.status = 'nope'; r.files[0].checksum = 1; })],
  ['many-archived-first', with_((r) => { r.archived = 1; r.granuleId = 2; })],
];

const out = cases.map(([name, record]) => ({ name, record, ...v21(record) }));
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
