package stdio

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// chunkReader serves data in reads of the sizes listed in sizes (each
// byte+1, cycling; all the rest at once when sizes is empty), then end.
// withLast returns end together with the last bytes instead of on the
// next call, as io.Reader allows.
type chunkReader struct {
	data     []byte
	sizes    []byte
	n        int
	end      error
	withLast bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, c.end
	}
	k := len(c.data)
	if len(c.sizes) > 0 {
		k = min(k, int(c.sizes[c.n%len(c.sizes)])+1)
		c.n++
	}
	k = copy(p, c.data[:k])
	c.data = c.data[k:]
	if len(c.data) == 0 && c.withLast {
		return k, c.end
	}
	return k, nil
}

var errFuzzRead = errors.New("read failed")

// wantLine is one result of lineReader.next in the reference model.
type wantLine struct {
	line    []byte
	tooLong bool
}

// referenceLines is what lineReader.next must return for in, before the
// final error: every line ends at '\n', and loses one '\r' before it; a
// line longer than max after that is reported as tooLong. The last line
// may lack a '\n' when the input ends in io.EOF (it then also loses a
// trailing '\r'); when the input ends in another error, a last line
// without '\n' is lost.
func referenceLines(in []byte, max int, eof bool) []wantLine {
	pieces := bytes.Split(in, []byte("\n"))
	last := pieces[len(pieces)-1]
	pieces = pieces[:len(pieces)-1]
	if eof && len(last) > 0 {
		pieces = append(pieces, last)
	}
	var want []wantLine
	for _, p := range pieces {
		p = bytes.TrimSuffix(p, []byte("\r"))
		if len(p) > max {
			want = append(want, wantLine{tooLong: true})
		} else {
			want = append(want, wantLine{line: p})
		}
	}
	return want
}

// FuzzLineReader feeds lineReader arbitrary input, cut into reads of
// arbitrary sizes, and checks every result against referenceLines: the
// lines and their order (so lines plus terminators give back the input,
// up to "\r\n" and the lines over the cap), no line over the cap or
// holding a '\n', tooLong lines returned as nil, and the end of the input
// reported with the reader's error (io.EOF, again on the next call, or
// another error). pad inserts a run of up to 120 000 bytes so lines longer
// than bufio's 64 KiB buffer are exercised, and maxSel picks caps both
// below and above that buffer.
func FuzzLineReader(f *testing.F) {
	for _, s := range []struct {
		data   string
		maxSel uint32
		sizes  string
		mode   uint8
		pad    uint32
	}{
		{"a\r\n\nbb\ncccccccccc\nddddddddddd\nlast", 10, "", 0, 0},
		{"a\r\n\nbb\ncccccccccc\nddddddddddd\nlast", 10, "\x00", 0, 0},
		{"a\r\n\nbb\ncccccccccc\nddddddddddd\nlast", 10, "\x02\x00\x05", 2, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n", 4 << 20, "\x07", 0, 0},
		{"exactly10!\r\nexactly10!\n", 10, "\x00", 0, 0},
		{"1234567890\r\r\n", 10, "", 0, 0},
		{"\r\n\r\n\n\r", 0, "\x00", 0, 0},
		{"partial line then a read error", 100, "\x03", 1, 0},
		{"done\npartial", 100, "", 3, 0},
		{"\n\n", 70000, "\xff", 0, 1*4 + 1},
		{"a\nb\n", 70000, "\xff", 0, 2*4 + 2},
		{"a\nb\n", 100, "\xff\x10", 0, 3*4 + 2},
		{"a\nb", 130000, "", 2, 3*4 + 3},
		{"", 5, "", 0, 0},
		{"", 5, "", 1, 0},
	} {
		f.Add([]byte(s.data), s.maxSel, []byte(s.sizes), s.mode, s.pad)
	}
	f.Fuzz(func(t *testing.T, data []byte, maxSel uint32, sizes []byte, mode uint8, pad uint32) {
		max := int(maxSel % 200_001)
		in := data
		if n := int(pad%4) * 40_000; n > 0 {
			at := int(pad/4) % (len(data) + 1)
			in = make([]byte, 0, len(data)+n)
			in = append(in, data[:at]...)
			in = append(in, bytes.Repeat([]byte{'x'}, n)...)
			in = append(in, data[at:]...)
		}
		end := io.EOF
		if mode&1 != 0 {
			end = errFuzzRead
		}
		want := referenceLines(in, max, end == io.EOF)
		lr := newLineReader(&chunkReader{data: in, sizes: sizes, end: end, withLast: mode&2 != 0}, max)
		for i := 0; ; i++ {
			line, tooLong, err := lr.next()
			if err != nil {
				if line != nil || tooLong {
					t.Fatalf("result %d: line %q, tooLong %v with error %v", i, line, tooLong, err)
				}
				if !errors.Is(err, end) {
					t.Fatalf("result %d: error %v; want %v", i, err, end)
				}
				if i != len(want) {
					t.Fatalf("ended after %d lines; want %d", i, len(want))
				}
				if end == io.EOF {
					if line, tooLong, err := lr.next(); line != nil || tooLong || !errors.Is(err, io.EOF) {
						t.Fatalf("next() after io.EOF = %q, %v, %v; want io.EOF again", line, tooLong, err)
					}
				}
				return
			}
			if i >= len(want) {
				t.Fatalf("result %d: %q, tooLong %v: more results than the %d lines of the input", i, line, tooLong, len(want))
			}
			switch {
			case len(line) > max:
				t.Fatalf("result %d: a line of %d bytes with a cap of %d (tooLong %v, want tooLong %v): %.80q", i, len(line), max, tooLong, want[i].tooLong, line)
			case bytes.IndexByte(line, '\n') >= 0:
				t.Fatalf("result %d: line %q holds a newline", i, line)
			case tooLong && line != nil:
				t.Fatalf("result %d: tooLong with a line of %d bytes", i, len(line))
			case tooLong != want[i].tooLong:
				t.Fatalf("result %d: tooLong %v; want %v (line %.80q, cap %d)", i, tooLong, want[i].tooLong, line, max)
			case !tooLong && !bytes.Equal(line, want[i].line):
				t.Fatalf("result %d: line %.80q; want %.80q", i, line, want[i].line)
			}
		}
	})
}
