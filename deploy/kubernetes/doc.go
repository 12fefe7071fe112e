// Package kubernetes holds no code: it is the home of the tests that render
// the kustomizations beside it and parse every object strictly into the
// Kubernetes API types, so that a misspelt or misplaced field fails a test
// instead of a run on a cluster. It is its own module, so that the
// Kubernetes libraries stay out of volanogo's go.mod. See README.md in this
// directory for the manifests' use.
package kubernetes
