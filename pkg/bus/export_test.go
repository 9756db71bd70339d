package bus

// EncodeRequestJSON is the envelope of earlier versions, for tests.
func EncodeRequestJSON(h *RequestHeader, msg []byte) ([]byte, error) {
	return EncodeRequestAs(0, h, msg)
}
