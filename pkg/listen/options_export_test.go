package listen

// EffectiveOptions returns the registry's options with the defaults of
// their zero fields applied, for the external tests.
func (r *Registry) EffectiveOptions() Options { return r.opts }
