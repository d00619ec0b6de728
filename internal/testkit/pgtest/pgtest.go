// Package pgtest starts a throwaway PostgreSQL server for tests: initdb in a
// temporary directory, the server on a free localhost port (no Unix
// socket), one fresh database per test, everything removed at the end.
//
// It needs the server binaries (Debian: apt-get install postgresql; .ci/run
// installs them). Without them tests skip, saying how to enable them — or
// fail when CI=true. PostgreSQL refuses to run as root, so under root the
// server runs as the "postgres" user (or "nobody").
//
// Use:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//	func TestX(t *testing.T) { url := pgtest.DB(t) ... }
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/testtmp"
	"github.com/jackc/pgx/v5"
)

// Server is a running throwaway cluster.
type Server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	log  string
}

var (
	once    sync.Once
	server  *Server
	skipMsg string // why no server (binaries missing)
	failMsg string // why the server could not start
	dbSeq   atomic.Int64
)

// Main runs the tests in a temporary directory of their own (testtmp) and
// stops the server if one was started.
func Main(m *testing.M) int {
	return testtmp.Run(func() int {
		code := m.Run()
		if server != nil {
			server.Stop()
		}
		return code
	})
}

// tmpRoot holds the clusters: the TMPDIR the process started with, not the
// one testtmp.Run sets (its directory is closed to the server's user).
var tmpRoot = os.TempDir()

// clusterPrefix names the clusters; the test process's pid follows it.
const clusterPrefix = "ctxtool-pgtest-"

// reapClusters removes the clusters in parent left by killed test runs (a
// test binary killed by its -timeout never runs Stop; the server then quits,
// but its directory, 39 MB to GBs, stayed): those with no running server
// (postmaster.pid missing or naming a dead process) whose test process is
// gone, or, named without a pid by older versions, that are older than
// legacyAge (initdb does not take that long).
func reapClusters(parent string, legacyAge time.Duration) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		dir := filepath.Join(parent, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), clusterPrefix) || postmasterAlive(dir) {
			continue
		}
		stale := false
		if pid, ok := testtmp.OwnerPID(e.Name(), clusterPrefix); ok {
			stale = !testtmp.Alive(pid)
		} else if info, err := e.Info(); err == nil {
			stale = time.Since(info.ModTime()) > legacyAge
		}
		if stale {
			os.RemoveAll(dir)
		}
	}
}

// postmasterAlive reports whether the server named by dir/data/postmaster.pid
// (its first line is the pid) is running.
func postmasterAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	return err == nil && pid > 0 && testtmp.Alive(pid)
}

// binDir finds initdb and postgres: on PATH, else the newest
// /usr/lib/postgresql/<version>/bin (Debian does not put them on PATH).
func binDir() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

// DB returns the URL of a new empty database on the shared test server,
// dropped when the test ends. It skips (fails under CI=true) when no
// PostgreSQL is installed.
func DB(t testing.TB) string {
	t.Helper()
	once.Do(start)
	if skipMsg != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pgtest: %s (CI=true: .ci/run installs Debian's postgresql package)", skipMsg)
		}
		t.Skipf("pgtest: %s; install PostgreSQL's server (apt-get install postgresql) to run the PostgreSQL tests", skipMsg)
	}
	if failMsg != "" {
		t.Fatalf("pgtest: %s", failMsg)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	url, err := server.CreateDB(name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, server.URL("postgres"))
		if err != nil {
			return
		}
		defer c.Close(ctx)
		c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return url
}

// Start starts a server outside a test (benchmarks); Stop it when done.
func Start() (*Server, error) {
	bin := binDir()
	if bin == "" {
		return nil, fmt.Errorf("no PostgreSQL server binaries (initdb, postgres) on PATH or in /usr/lib/postgresql/*/bin: apt-get install postgresql")
	}
	return startServer(bin)
}

// CreateDB creates database name and returns its URL.
func (s *Server) CreateDB(name string) (string, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return s.URL(name), nil
}

// URL is the connection URL of database name.
func (s *Server) URL(name string) string {
	return fmt.Sprintf("postgres://ctxtool@127.0.0.1:%d/%s?sslmode=disable", s.port, name)
}

func start() {
	bin := binDir()
	if bin == "" {
		skipMsg = "no PostgreSQL server binaries (initdb, postgres) on PATH or in /usr/lib/postgresql/*/bin"
		return
	}
	s, err := startServer(bin)
	if err != nil {
		failMsg = err.Error()
		return
	}
	server = s
}

// runAs is the credential to run the server with: PostgreSQL refuses root.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, fmt.Errorf("running as root and no unprivileged user (postgres, nobody) to run the server as")
}

func startServer(bin string) (*Server, error) {
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	reapClusters(tmpRoot, 10*time.Minute)
	dir, err := os.MkdirTemp(tmpRoot, clusterPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, log: filepath.Join(dir, "server.log")}
	if cred != nil {
		// The server's user must reach its directory.
		os.Chmod(dir, 0o755)
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	run := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8")
		if cred != nil {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return c
	}
	out, err := run("initdb", "-D", data, "-U", "ctxtool", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8").CombinedOutput()
	if err != nil {
		// Older systems lack the C.UTF-8 locale.
		os.RemoveAll(data)
		out, err = run("initdb", "-D", data, "-U", "ctxtool", "--auth=trust", "-E", "UTF8", "--no-locale").CombinedOutput()
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	for attempt := 0; attempt < 5; attempt++ {
		if s.port, err = freePort(); err != nil {
			break
		}
		logf, lerr := os.Create(s.log)
		if lerr != nil {
			err = lerr
			break
		}
		if cred != nil {
			os.Chown(s.log, int(cred.Uid), int(cred.Gid))
		}
		s.cmd = run("postgres", "-D", data, "-p", strconv.Itoa(s.port),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
			// a throwaway cluster: durability costs time and buys nothing
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
			"-c", "max_connections=200", "-c", "shared_buffers=128MB")
		s.cmd.Stdout, s.cmd.Stderr = logf, logf
		// Its own process group: a Ctrl-C to the test does not race our
		// orderly shutdown.
		if s.cmd.SysProcAttr == nil {
			s.cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		s.cmd.SysProcAttr.Setpgid = true
		// A test binary killed by its timeout never runs Main's Stop:
		// the server then quits with it (immediate shutdown).
		s.cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
		if err = s.cmd.Start(); err != nil {
			logf.Close()
			break
		}
		logf.Close()
		if err = s.waitReady(30 * time.Second); err == nil {
			return s, nil
		}
		s.Stop()
		s.cmd = nil
	}
	logText, _ := os.ReadFile(s.log)
	os.RemoveAll(dir)
	return nil, fmt.Errorf("start postgres: %w\n%s", err, logText)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) waitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgx.Connect(ctx, s.URL("postgres"))
		cancel()
		if err == nil {
			c.Close(context.Background())
			go func() { <-exited }()
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("server exited: %w", werr)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready after %s: %w", d, err)
		}
	}
}

// Stop shuts the server down (fast shutdown) and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGINT)
		for i := 0; i < 100; i++ {
			if s.cmd.Process.Signal(syscall.Signal(0)) != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		s.cmd.Process.Kill()
	}
	if !strings.Contains(s.dir, clusterPrefix) {
		return // never remove anything we did not create
	}
	os.RemoveAll(s.dir)
}
