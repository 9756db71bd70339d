package stdio

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// genReader yields n bytes of 'x' then tail, without holding them.
type genReader struct {
	n    int
	tail string
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.n > 0 {
		k := min(len(p), g.n)
		for i := range k {
			p[i] = 'x'
		}
		g.n -= k
		return k, nil
	}
	if g.tail == "" {
		return 0, io.EOF
	}
	k := copy(p, g.tail)
	g.tail = g.tail[k:]
	return k, nil
}

func TestLineReaderHugeLineIsNotHeld(t *testing.T) {
	const max = 1 << 20
	lr := newLineReader(&genReader{n: 256 << 20, tail: "\n{\"after\":1}\n"}, max)
	line, tooLong, err := lr.next()
	if err != nil || !tooLong || line != nil {
		t.Fatalf("next() = %q, %v, %v; want tooLong", line, tooLong, err)
	}
	if c := cap(lr.buf); c > max+(128<<10) {
		t.Fatalf("the reader grew its buffer to %d bytes for a line over the %d-byte cap", c, max)
	}
	line, tooLong, err = lr.next()
	if err != nil || tooLong || string(line) != `{"after":1}` {
		t.Fatalf("the line after: %q, %v, %v", line, tooLong, err)
	}
	if _, _, err := lr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
}

func TestLineReaderLines(t *testing.T) {
	in := "a\r\n\nbb\n" + strings.Repeat("c", 10) + "\n" + strings.Repeat("d", 11) + "\nlast"
	lr := newLineReader(strings.NewReader(in), 10)
	want := []struct {
		line    string
		tooLong bool
	}{{"a", false}, {"", false}, {"bb", false}, {strings.Repeat("c", 10), false}, {"", true}, {"last", false}}
	for i, w := range want {
		line, tooLong, err := lr.next()
		if err != nil || string(line) != w.line || tooLong != w.tooLong {
			t.Fatalf("line %d: %q, %v, %v; want %q, %v", i, line, tooLong, err, w.line, w.tooLong)
		}
	}
	if _, _, err := lr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
}

// A line over the cap that the input ends in the middle of is reported,
// then EOF.
func TestLineReaderTooLongAtEOF(t *testing.T) {
	lr := newLineReader(&genReader{n: 5000}, 100)
	if _, tooLong, err := lr.next(); err != nil || !tooLong {
		t.Fatalf("got %v, %v; want tooLong", tooLong, err)
	}
	if _, _, err := lr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
}
