// Package kubernetes holds no code: it is the home of the test that parses
// the Kubernetes manifests beside it strictly into the Kubernetes API types,
// so that a misspelt or misplaced field fails `go test ./...` instead of a
// run on a cluster. See README.md in this directory for the manifests' use.
package kubernetes
