package recall

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An unreachable server is a StoreError with the "is it running" remedy,
// decided by the error's type: a refused dial and a server that hangs up
// during startup (both *pgconn.ConnectError), and a reset, aborted or
// closed connection. Other errors stay plain.
func TestPostgresUnreachableIsStoreError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	refused := listen(t)
	refused.Close()
	hangUp := listen(t)
	defer hangUp.Close()
	go func() {
		for {
			c, err := hangUp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for name, addr := range map[string]string{"refused": refused.Addr().String(), "hang-up": hangUp.Addr().String()} {
		_, err := openPostgres(ctx, "postgres://u:p@"+addr+"/db?sslmode=disable", schemaVersion)
		if !isUnreachable(err) {
			t.Errorf("%s: %v (%T), want a StoreError naming the server", name, err, err)
		}
	}
	s := &pgStore{loc: "postgres://h/db"}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for err, want := range map[error]bool{
		reset: true,
		fmt.Errorf("write: %w", syscall.ECONNABORTED): true,
		fmt.Errorf("read: %w", net.ErrClosed):         true,
		errors.New("cannot reconnect the dots"):       false,
	} {
		if got := isUnreachable(s.err("query", err)); got != want {
			t.Errorf("s.err(%v) unreachable = %v, want %v", err, got, want)
		}
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func isUnreachable(err error) bool {
	var se *StoreError
	return errors.As(err, &se) && strings.Contains(se.Remedy, "server is running")
}
