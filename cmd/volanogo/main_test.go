//go:build unix

package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volanogo/volanogo/pkg/protocol"
)

const childEnv = "VOLANOGO_MAIN_TEST_CHILD"

// TestMain lets the tests run this binary as volanogo itself.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Args = append([]string{"volanogo"}, strings.Fields(os.Getenv(childEnv))...)
		main()
		return
	}
	os.Exit(m.Run())
}

// TestServeStopsOnSignal: volanogo serve, sent SIGINT or SIGTERM, closes
// its connections and exits 0 within a few seconds.
func TestServeStopsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0")
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
			})
			lines := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
				done <- cmd.Wait()
			}()
			var addr string
			select {
			case l := <-lines:
				require.True(t, strings.HasPrefix(l, "volanogo serve listening:"), l)
				for _, f := range strings.Fields(l) {
					if a, ok := strings.CutPrefix(f, "chat="); ok {
						addr = a
					}
				}
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not start")
			}
			nc, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer nc.Close()
			// A served Access request: the server has accepted the
			// connection.
			access, err := (&protocol.Access{Type: protocol.Request, AppletVersion: "2.13.4",
				DocumentBase: "http://www.volano.com/chat.html"}).AppendPacket(nil)
			require.NoError(t, err)
			_, err = nc.Write(access)
			require.NoError(t, err)
			require.NoError(t, nc.SetReadDeadline(time.Now().Add(5*time.Second)))
			f, err := protocol.NewReader(nc, 0).Next()
			require.NoError(t, err)
			require.Equal(t, protocol.IDAccess, f.ID)
			start := time.Now()
			require.NoError(t, cmd.Process.Signal(sig))
			select {
			case err := <-done:
				assert.NoError(t, err, "exit status 0")
				assert.Less(t, time.Since(start), 5*time.Second)
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not stop")
			}
			_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, err = nc.Read(make([]byte, 1))
			assert.False(t, errors.Is(err, os.ErrDeadlineExceeded), "connection closed by the server: %v", err)
		})
	}
}
