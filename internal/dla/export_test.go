package dla

// DecodeReference is the decoder before the single-pass rewrite, for the
// differential tests of the external test package (which may import gen).
var DecodeReference = decodeReference
