package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/volanogo/volanogo/internal/cli"
	"github.com/volanogo/volanogo/internal/handshake"
	"github.com/volanogo/volanogo/internal/metrics"
)

// TestServerAnswersItsProbes runs the server container's own arguments
// (its listen addresses moved to free loopback ports) with this checkout's
// volanogo, and asks it what the kubelet and the swarm will: the probes'
// paths on the metrics port, and the CPU time that --server-metrics reads.
func TestServerAnswersItsProbes(t *testing.T) {
	objs := loadManifests(t)
	c := find[*appsv1.Deployment](t, objs, "volanogo-server").Spec.Template.Spec.Containers[0]
	swarm := find[*batchv1.Job](t, objs, "volanogo-swarm").Spec.Template.Spec.Containers[0]

	args := append([]string(nil), c.Args...)
	for i, a := range args {
		if strings.HasPrefix(a, ":") {
			args[i] = "127.0.0.1:0"
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := cli.Main(ctx, args, nil, pw, &stderr)
		pw.Close()
		done <- code
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the server did not stop")
		}
	})

	ready := make(chan handshake.Serve, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if s, ok := handshake.ParseServe(sc.Text()); ok {
				ready <- s
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	var s handshake.Serve
	select {
	case s = <-ready:
	case code := <-done:
		t.Fatalf("serve %v exited %d: %s", args, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve %v never said it was listening: %s", args, stderr.String())
	}
	require.NotEmpty(t, s.Metrics, "the server's arguments open a metrics listener")

	client := &http.Client{Timeout: 10 * time.Second}
	for _, probe := range []string{c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path} {
		resp, err := client.Get("http://" + s.Metrics + probe)
		require.NoError(t, err, probe)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", probe, body)
	}

	// The swarm's --server-metrics, pointed at this server.
	u, err := url.Parse(flagValue(t, swarm.Args, "--server-metrics"))
	require.NoError(t, err)
	u.Host = s.Metrics
	samples, err := metrics.Scrape(ctx, client, u.String())
	require.NoError(t, err)
	_, ok := samples.Get("process_cpu_seconds_total")
	assert.True(t, ok, "the server's CPU time, for the result documents")
	client.CloseIdleConnections()
}
