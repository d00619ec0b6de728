// Command e2etime times a search end to end, once per query of a file:
// a command started per query (its wall time, and its own CPU time from
// the rusage of the process, so a loaded machine's wait for a core shows
// apart), or a GET to a running server (wall time; CPU is the server's,
// read from /proc before and after, as a mean per query). It prints one
// line: p50 and p95 of each.
//
//	e2etime -q queries.txt -- ctxtool search --json {}
//	e2etime -q queries.txt -url 'http://127.0.0.1:8080/api/v1/search?limit=10' -param q -pid 1234
//
// bench/recall-peers.sh runs it for ctxtool and each peer on the same
// queries.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	qfile := flag.String("q", "", "file of queries, one a line")
	u := flag.String("url", "", "GET this URL with the query as -param instead of running a command")
	param := flag.String("param", "q", "the URL's query parameter")
	pid := flag.Int("pid", 0, "with -url: the server's process id, for its CPU time")
	flag.Parse()
	qs, err := readLines(*qfile)
	if err == nil && len(qs) == 0 {
		err = fmt.Errorf("%s holds no query", *qfile)
	}
	if err == nil && *u == "" && flag.NArg() == 0 {
		err = fmt.Errorf("name a command after --, with {} where the query goes, or -url")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2etime:", err)
		os.Exit(2)
	}
	var wall, cpu []time.Duration
	var serverCPU time.Duration
	if *u != "" {
		wall, serverCPU, err = timeGets(*u, *param, *pid, qs)
	} else {
		wall, cpu, err = timeCommands(flag.Args(), qs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2etime:", err)
		os.Exit(1)
	}
	line := fmt.Sprintf("%d queries: wall p50 %s p95 %s", len(qs), ms(pct(wall, 50)), ms(pct(wall, 95)))
	if cpu != nil {
		line += fmt.Sprintf("; process CPU p50 %s p95 %s", ms(pct(cpu, 50)), ms(pct(cpu, 95)))
	}
	if *pid > 0 {
		line += fmt.Sprintf("; server CPU mean %s", ms(serverCPU/time.Duration(len(qs))))
	}
	fmt.Println(line)
}

func readLines(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// timeCommands runs args once per query ({} replaced by it); a command
// that fails stops the run with its output.
func timeCommands(args, qs []string) (wall, cpu []time.Duration, err error) {
	for _, q := range qs {
		a := make([]string, len(args))
		for i, s := range args {
			a[i] = strings.ReplaceAll(s, "{}", q)
		}
		cmd := exec.Command(a[0], a[1:]...)
		var errb strings.Builder
		cmd.Stdout, cmd.Stderr = io.Discard, &errb
		t := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, nil, fmt.Errorf("%q: %w: %s", strings.Join(a, " "), err, errb.String())
		}
		wall = append(wall, time.Since(t))
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu = append(cpu, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
	}
	return wall, cpu, nil
}

// timeGets asks a server each query; the server's CPU over all of them
// comes from /proc/pid/stat.
func timeGets(base, param string, pid int, qs []string) (wall []time.Duration, serverCPU time.Duration, err error) {
	before, err := procCPU(pid)
	if err != nil {
		return nil, 0, err
	}
	for _, q := range qs {
		u, err := url.Parse(base)
		if err != nil {
			return nil, 0, err
		}
		v := u.Query()
		v.Set(param, q)
		u.RawQuery = v.Encode()
		t := time.Now()
		resp, err := http.Get(u.String())
		if err != nil {
			return nil, 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, 0, fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		wall = append(wall, time.Since(t))
	}
	after, err := procCPU(pid)
	return wall, after - before, err
}

// procCPU is a process's user+system time from /proc/pid/stat (0 for pid 0).
func procCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
