package bus

// EncodeRequestJSON is encodeRequestJSON, for tests: the envelope of
// earlier versions.
var EncodeRequestJSON = encodeRequestJSON
