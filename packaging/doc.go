// Package packaging holds no code: it is the home of the tests of what
// packages volanogo for others' harnesses: the release image's Dockerfile
// (image/, checked by tools/image), an LKP job with its test, stats and
// pack scripts (lkp/), and a Phoronix Test Suite test profile
// (pts/volanogo-1.0.0/). The tests parse them and run the LKP job and the
// PTS profile end to end on loopback with this checkout's volanogo.
package packaging
