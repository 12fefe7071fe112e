//go:build tools

// Package deps pins modules that packages under construction will import,
// so that parallel work does not race on go.mod. Remove once all are used.
package deps

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/gorilla/websocket"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/cobra/doc"
	_ "github.com/stretchr/testify/assert"
	_ "github.com/stretchr/testify/require"
	_ "golang.org/x/perf/benchmath"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
	_ "k8s.io/api/apps/v1"
	_ "k8s.io/api/batch/v1"
	_ "k8s.io/api/core/v1"
	_ "sigs.k8s.io/yaml"
)
