package render

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chromedp/chromedp"
)

// rss is the memory the browser's processes hold together (bytes): the
// browser and every process under it (renderers, GPU, network), each its
// proportional share (Pss: a page shared by n processes counts 1/n in
// each, so that shared libraries are not counted once a process), read
// from /proc; 0 where there is none to read.
func (b *browser) rss() int64 {
	c := chromedp.FromContext(b.ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return 0
	}
	return treeRSS(c.Browser.Process().Pid)
}

// treeRSS sums the resident memory of pid and its descendants.
func treeRSS(pid int) int64 {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	children := map[int][]int{}
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
		children[ppid] = append(children[ppid], p)
	}
	var sum int64
	todo := []int{pid}
	for len(todo) > 0 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		sum += processRSS(p)
		todo = append(todo, children[p]...)
	}
	return sum
}

// processRSS is one process's proportional resident memory (bytes), from
// its smaps_rollup.
func processRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
