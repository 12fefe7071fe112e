// Package packaging holds no code: it is the home of the tests of what
// packages volanogo for others' harnesses: the release image's Dockerfile
// (image/, checked by tools/image), an LKP job and program in lkp-tests'
// current layout (lkp/jobs, lkp/programs/volanogo: run, parse, meta.yaml,
// pkg/PKGBUILD), and a Phoronix Test Suite test profile
// (pts/volanogo-1.0.0/, with pts/profile.sh writing a release's
// downloads.xml). The tests check them against those projects' formats and
// run the LKP program and the PTS profile end to end on loopback with this
// checkout's volanogo.
package packaging
