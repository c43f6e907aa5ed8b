package wacz

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"os"
	"slices"
)

// sorter sorts lines in bounded memory: it keeps up to limit bytes of
// them, and past that sorts what it holds into a run, a temporary file,
// then merges the runs (a k-way merge) as it writes them out. An index of
// tens of millions of lines so costs a few runs on disk, not its size in
// memory.
type sorter struct {
	dir   string // where runs go ("": the system's temporary directory)
	limit int
	lines []string
	size  int
	runs  []string
}

func newSorter(dir string, limit int) *sorter { return &sorter{dir: dir, limit: limit} }

// add takes one line (without its newline).
func (s *sorter) add(line string) error {
	s.lines = append(s.lines, line)
	s.size += len(line) + 16 // the string header too
	if s.size >= s.limit {
		return s.spill()
	}
	return nil
}

// spill sorts the lines held into a run on disk.
func (s *sorter) spill() error {
	slices.Sort(s.lines)
	f, err := os.CreateTemp(s.dir, "redcrawl-wacz-run-*")
	if err != nil {
		return fmt.Errorf("wacz: sorting the index: %w", err)
	}
	s.runs = append(s.runs, f.Name())
	w := bufio.NewWriterSize(f, 1<<16)
	for _, l := range s.lines {
		w.WriteString(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("wacz: sorting the index: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("wacz: sorting the index: %w", err)
	}
	s.lines, s.size = s.lines[:0], 0
	return nil
}

// writeTo writes every line, sorted, each with its newline, and removes
// the runs; it returns how many lines it wrote.
func (s *sorter) writeTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	n, err := s.each(func(l string) error {
		bw.WriteString(l)
		return bw.WriteByte('\n')
	})
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// each hands every line, sorted, to fn, and removes the runs; it returns
// how many lines it handed.
func (s *sorter) each(fn func(line string) error) (int64, error) {
	defer s.remove()
	if len(s.runs) == 0 {
		slices.Sort(s.lines)
		for i, l := range s.lines {
			if err := fn(l); err != nil {
				return int64(i), err
			}
		}
		return int64(len(s.lines)), nil
	}
	if len(s.lines) > 0 {
		if err := s.spill(); err != nil {
			return 0, err
		}
	}
	h := &runHeap{}
	for _, name := range s.runs {
		f, err := os.Open(name)
		if err != nil {
			return 0, fmt.Errorf("wacz: merging the index: %w", err)
		}
		defer f.Close()
		r := &run{sc: bufio.NewScanner(f)}
		r.sc.Buffer(make([]byte, 1<<16), maxLine)
		if r.next() {
			heap.Push(h, r)
		} else if err := r.sc.Err(); err != nil {
			return 0, fmt.Errorf("wacz: merging the index: %w", err)
		}
	}
	var n int64
	for h.Len() > 0 {
		r := (*h)[0]
		if err := fn(r.line); err != nil {
			return n, err
		}
		n++
		if r.next() {
			heap.Fix(h, 0)
		} else {
			if err := r.sc.Err(); err != nil {
				return n, fmt.Errorf("wacz: merging the index: %w", err)
			}
			heap.Pop(h)
		}
	}
	return n, nil
}

// remove deletes the runs.
func (s *sorter) remove() {
	for _, name := range s.runs {
		os.Remove(name)
	}
	s.runs = nil
}

// maxLine bounds an index line (a URL is at most a few kilobytes).
const maxLine = 1 << 20

type run struct {
	sc   *bufio.Scanner
	line string
}

func (r *run) next() bool {
	if !r.sc.Scan() {
		return false
	}
	r.line = r.sc.Text()
	return true
}

type runHeap []*run

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return h[i].line < h[j].line }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*run)) }
func (h *runHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}
