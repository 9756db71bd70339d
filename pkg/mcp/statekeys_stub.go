package mcp

// TEMPORARY stub (replaced by the api branch's implementation at merge).

// SetStateKeys installs the requestState keys.
func (s *Server) SetStateKeys(key []byte, old ...[]byte) error {
	sl, err := newSealer(append([][]byte{key}, old...)...)
	if err != nil {
		return err
	}
	s.sealer = sl
	s.opts.StateKey = key
	return nil
}

// StateKeyConfigured reports whether a key was configured.
func (s *Server) StateKeyConfigured() bool { return s.opts.StateKey != nil }
