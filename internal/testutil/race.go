//go:build race

package testutil

// Race is true when the tests run under the race detector, which slows
// them several times: timing windows widen with Slack.
const Race = true
