package mcp

import (
	"slices"
	"sync"
)

// Bounds of a catalog's ResourceLabel cache: the answers for at most
// labelCacheSize distinct URIs, each at most labelCacheURILen bytes long
// (longer ones are matched every time).
const (
	labelCacheSize   = 1024
	labelCacheURILen = 512
)

// labelCache remembers which template a URI matched (or that none did).
type labelCache struct {
	mu sync.RWMutex
	m  map[string]string // uri -> its template, "" for none
}

// ResourceLabel names uri by what the catalog offers, for metric labels
// whose values the catalog bounds: uri itself when it is one of the
// catalog's resources (or one of its URI templates, as a completion
// reference names it); else the URI template it matches, the first in
// the catalog's order (sorted, for a merged catalog); ok is false when
// neither is so. A resource costs a binary search; a template URI its
// matching the first time, then a map lookup (the answers for up to 1024
// URIs of at most 512 bytes are kept with the catalog, so a catalog that
// changes starts afresh). It never allocates for a URI it has answered.
func (c *Catalog) ResourceLabel(uri string) (label string, ok bool) {
	x := c.idx()
	if i, found := slices.BinarySearch(x.resourceURIs, uri); found {
		return x.resourceURIs[i], true
	}
	if i, found := slices.BinarySearch(x.templateURIs, uri); found {
		return x.templateURIs[i], true
	}
	if len(x.templates) == 0 {
		return "", false
	}
	cacheable := len(uri) <= labelCacheURILen
	if cacheable {
		c.labels.mu.RLock()
		t, hit := c.labels.m[uri]
		c.labels.mu.RUnlock()
		if hit {
			return t, t != ""
		}
	}
	for i, t := range x.templates {
		if t == nil {
			continue
		}
		if _, match := t.Match(uri); match {
			label = x.templateURIs[i]
			break
		}
	}
	if cacheable {
		c.labels.mu.Lock()
		if c.labels.m == nil {
			c.labels.m = make(map[string]string)
		}
		if len(c.labels.m) < labelCacheSize {
			c.labels.m[uri] = label
		}
		c.labels.mu.Unlock()
	}
	return label, label != ""
}
