package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ProcSample is a snapshot of server processes, summed over their PIDs.
type ProcSample struct {
	// CPUTicks is utime+stime in clock ticks (/proc/<pid>/stat).
	CPUTicks int64
	// RSS is the resident set size in bytes (VmRSS).
	RSS int64
	// Threads is the number of OS threads.
	Threads int
	// Switches is the context switches of the process's threads,
	// voluntary (a thread that waited: for the network, a lock, a futex)
	// and not (preempted), from /proc/<pid>/task/*/status. A thread that
	// ended takes its count with it.
	Switches int64
}

// CPU returns the CPU time of the sample.
func (s ProcSample) CPU() time.Duration {
	return time.Duration(s.CPUTicks) * time.Second / time.Duration(clockTicks())
}

var (
	clkOnce sync.Once
	clkTck  int64 = 100
)

// clockTicks returns the kernel's USER_HZ (getconf CLK_TCK); 100 when
// getconf is not available, which is what Linux uses everywhere.
func clockTicks() int64 {
	clkOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "getconf", "CLK_TCK").Output()
		if err != nil {
			return
		}
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(out)), 10, 64); err == nil && n > 0 {
			clkTck = n
		}
	})
	return clkTck
}

// SampleProcs reads /proc for each PID and sums the figures. It fails when
// a process is gone or /proc cannot be read (not Linux).
func SampleProcs(pids []int) (ProcSample, error) {
	var s ProcSample
	for _, pid := range pids {
		one, err := sampleProc(pid)
		if err != nil {
			return ProcSample{}, err
		}
		s.add(one)
	}
	return s, nil
}

// sampleEach samples each PID on its own.
func sampleEach(pids []int) ([]ProcSample, error) {
	out := make([]ProcSample, len(pids))
	for i, pid := range pids {
		s, err := sampleProc(pid)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func (s *ProcSample) add(o ProcSample) {
	s.CPUTicks += o.CPUTicks
	s.RSS += o.RSS
	s.Threads += o.Threads
	s.Switches += o.Switches
}

func sampleProc(pid int) (ProcSample, error) {
	var s ProcSample
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, fmt.Errorf("loadgen: reading the CPU time of PID %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(st, ')')
	if i < 0 || i+2 > len(st) {
		return s, fmt.Errorf("loadgen: /proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(st[i+2:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return s, fmt.Errorf("loadgen: /proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	stt, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("loadgen: /proc/%d/stat: bad utime/stime", pid)
	}
	s.CPUTicks = ut + stt
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("loadgen: reading the memory of PID %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			continue
		}
		switch k {
		case "VmRSS":
			kb, _ := strconv.ParseInt(fs[0], 10, 64)
			s.RSS = kb * 1024
		case "Threads":
			s.Threads, _ = strconv.Atoi(fs[0])
		}
	}
	if s.Switches, err = threadSwitches(pid); err != nil {
		return s, err
	}
	return s, nil
}

// threadSwitches sums voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches over the threads of pid; a thread that ends
// while it reads is skipped (so a later sample may count fewer: see
// serverStats).
func threadSwitches(pid int) (int64, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("loadgen: reading the threads of PID %d: %w", pid, err)
	}
	var n int64
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		n += statusSwitches(b)
	}
	return n, nil
}

// statusSwitches reads the two context-switch counts of a
// /proc/.../status file and returns their sum.
func statusSwitches(status []byte) int64 {
	var n int64
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
			c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			n += c
		}
	}
	return n
}

// selfCPU returns the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CheckOpenFiles makes sure this process may hold need more open files,
// raising the soft limit up to the hard one if needed, and fails with the
// fix when it cannot.
func CheckOpenFiles(need int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("loadgen: reading the open-files limit: %w", err)
	}
	open := countOpenFiles()
	want := uint64(open + need + 64)
	if lim.Cur >= want {
		return nil
	}
	if lim.Max >= want {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
			return nil
		}
	}
	return fmt.Errorf("loadgen: %d connections need about %d open files but the limit is %d (hard %d); raise it first, e.g. `ulimit -n 65536` (as root, or via /etc/security/limits.conf)", need, want, lim.Cur, lim.Max)
}

func countOpenFiles() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 16
	}
	return len(ents)
}
