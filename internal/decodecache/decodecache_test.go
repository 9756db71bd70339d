package decodecache

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func decodeLen(k string) (*int, error) {
	if k == "bad" {
		return nil, errors.New("bad")
	}
	n := len(k)
	return &n, nil
}

// TestBounds: values are shared by their bytes, the cache starts over when
// full, keeps no large value (still decoded) and nothing that failed.
func TestBounds(t *testing.T) {
	c := New[int]()
	a, _ := c.Get("abc", decodeLen)
	b, _ := c.GetBytes([]byte("abc"), decodeLen)
	if a == nil || a != b || *a != 3 {
		t.Fatalf("Get and GetBytes of the same bytes: %v, %v", a, b)
	}
	for i := range MaxEntries + 10 {
		if v, err := c.Get("k"+strconv.Itoa(i), decodeLen); err != nil || v == nil {
			t.Fatal(v, err)
		}
		if c.Len() > MaxEntries {
			t.Fatalf("%d entries, over the bound %d", c.Len(), MaxEntries)
		}
	}
	big := strings.Repeat("y", MaxBytes+1)
	n := c.Len()
	if v, err := c.Get(big, decodeLen); err != nil || *v != len(big) {
		t.Fatalf("a large value: %v, %v", v, err)
	}
	if _, err := c.Get("bad", decodeLen); err == nil {
		t.Error("a decode error was not returned")
	}
	if c.Len() != n {
		t.Errorf("%d entries, want %d: a large or failed value was kept", c.Len(), n)
	}
}

// TestKeyIsOwnCopy: a kept key does not alias the caller's bytes.
func TestKeyIsOwnCopy(t *testing.T) {
	c := New[int]()
	raw := []byte("xyz")
	v, _ := c.GetBytes(raw, decodeLen)
	raw[0] = 'q'
	if w, _ := c.Get("xyz", decodeLen); w != v {
		t.Error("the kept key changed with the caller's buffer")
	}
}
