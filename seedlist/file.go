package seedlist

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxLine is the longest line of a seed file read as a URL; a longer
// one is reported and skipped, not the end of the file.
const MaxLine = 1 << 20

// readFile hands each URL line of a file (or stdin, for "-") to take,
// with its place ("urls.txt:14") and number, without holding the file in
// memory; a line too long to be a URL goes to refuse. Lines before from
// (counted from 1, as the places are) are passed over.
func readFile(name string, from int, take func(where string, line int, text string) error, refuse func(where string, line int, err error) error) error {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("seed: %v", err)
		}
		defer f.Close()
		r = f
	} else {
		name = "stdin"
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, tooLong, err := nextLine(br, MaxLine)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("seed: reading %s at line %d: %v", name, n, err)
		}
		if n < from {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, n)
		if tooLong {
			if err := refuse(where, n, fmt.Errorf("a line over %d bytes, not a URL", MaxLine)); err != nil {
				return err
			}
			continue
		}
		t := strings.TrimSpace(string(line))
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if err := take(where, n, t); err != nil {
			return err
		}
	}
}

// nextLine reads one line (without its end) of at most limit bytes; a
// longer one is read to its end and reported as too long. io.EOF comes
// only when no line is left.
func nextLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		frag, more, err := br.ReadLine()
		if err != nil {
			return nil, false, err
		}
		if !tooLong && len(line)+len(frag) > limit {
			tooLong, line = true, nil
		}
		if !tooLong {
			line = append(line, frag...)
		}
		if !more {
			return line, tooLong, nil
		}
	}
}
