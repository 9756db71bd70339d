package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader reads newline-delimited messages with a cap on a line's
// length. A longer line is discarded as it streams by: it is never held in
// memory whole.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its terminator ("\n" or "\r\n").
// tooLong is set for a line over the cap (line is then nil). The last line
// may lack a terminator. err is io.EOF at the end of the input.
func (l *lineReader) next() (line []byte, tooLong bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong {
			if len(l.buf)+len(chunk) > l.max+2 { // room for "\r\n"
				tooLong = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, true, nil
			}
			line = bytes.TrimSuffix(bytes.TrimSuffix(l.buf, []byte("\n")), []byte("\r"))
			if len(line) > l.max {
				return nil, true, nil
			}
			return line, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if tooLong {
				return nil, true, nil
			}
			if len(l.buf) > 0 {
				line = bytes.TrimSuffix(l.buf, []byte("\r"))
				if len(line) > l.max {
					return nil, true, nil
				}
				return line, false, nil
			}
			return nil, false, io.EOF
		default:
			return nil, false, err
		}
	}
}
