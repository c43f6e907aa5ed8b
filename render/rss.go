package render

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A browser's memory is the memory its processes hold together: the
// browser and every process under it (zygote, renderers, GPU, utility),
// each its proportional share (Pss: a page shared by n processes counts
// 1/n in each, so that shared libraries are not counted once a process),
// read from /proc.

// tree is pid and its descendants, pid first; nil for pid 0. It reads
// each process's children from /proc/PID/task/TID/children, or, where the
// kernel has no such file, every process's parent.
func tree(pid int) []int {
	if pid == 0 {
		return nil
	}
	var parents map[int][]int
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		kids, ok := children(out[i])
		if !ok {
			if parents == nil {
				parents = byParent()
			}
			kids = parents[out[i]]
		}
		out = append(out, kids...)
	}
	return out
}

// children are pid's child processes, from its threads' children files.
func children(pid int) ([]int, bool) {
	files, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if len(files) == 0 {
		return nil, false
	}
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
			}
		}
	}
	return out, true
}

// byParent maps each process to its children, from every /proc/PID/stat.
func byParent() map[int][]int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	out := map[int][]int{}
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
		out[ppid] = append(out[ppid], p)
	}
	return out
}

// residentSum is the processes' resident memory together (bytes), from
// their statm: cheap, and never less than their Pss together.
func residentSum(procs []int) int64 {
	var sum int64
	for _, p := range procs {
		sum += resident(p)
	}
	return sum
}

// treePss is the processes' proportional memory together (bytes).
func treePss(procs []int) int64 {
	var sum int64
	for _, p := range procs {
		sum += proportional(p)
	}
	return sum
}

var pageSize = int64(os.Getpagesize())

// resident is one process's resident memory (bytes), from its statm.
func resident(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n * pageSize
}

// proportional is one process's proportional resident memory (bytes),
// from its smaps_rollup.
func proportional(pid int) int64 {
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
