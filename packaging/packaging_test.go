package packaging

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/xml"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/volanogo/volanogo/internal/cli"
	"github.com/volanogo/volanogo/internal/testutil"
)

// binDir holds the volanogo binary the tests build once.
var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// volanogo builds this checkout's volanogo once.
func volanogo(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binError = os.MkdirTemp("", "volanogo-packaging-")
		if binError != nil {
			return
		}
		binPath = filepath.Join(binDir, "volanogo")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/volanogo").CombinedOutput()
		if err != nil {
			binError = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binError)
	return binPath
}

// runScript runs a shell script with only the environment given (and
// PATH), in dir, with stdin; it fails the test if it does not end within
// two minutes.
func runScript(t *testing.T, dir, script string, env map[string]string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runScriptWith(t, "sh", dir, script, env, stdin, args...)
}

// runScriptWith is runScript with another shell (bash).
func runScriptWith(t *testing.T, shell, dir, script string, env map[string]string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Slack(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, append([]string{script}, args...)...)
	cmd.WaitDelay = 10 * time.Second // a child left holding the output does not hold the test
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "%s did not end: %s", script, e.String())
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s: %s", script, e.String())
		code = ee.ExitCode()
	}
	return o.String(), e.String(), code
}

// parseKeyValues reads LKP's "key: value" stats lines.
func parseKeyValues(t *testing.T, out string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		require.True(t, ok, "not key: value: %q", sc.Text())
		f, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, "%q", sc.Text())
		m[k] = f
	}
	return m
}

// lkpJob is an LKP job file.
type lkpJob struct {
	Suite    string         `yaml:"suite"`
	Testcase string         `yaml:"testcase"`
	Category string         `yaml:"category"`
	Params   map[string]any `yaml:"volanogo"`
}

// expand is LKP's expansion of a job's lists into one job per
// combination, in key order.
func expand(params map[string]any) []map[string]string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	jobs := []map[string]string{{}}
	for _, k := range keys {
		values := []any{params[k]}
		if l, ok := params[k].([]any); ok {
			values = l
		}
		var next []map[string]string
		for _, j := range jobs {
			for _, v := range values {
				c := map[string]string{}
				for a, b := range j {
					c[a] = b
				}
				c[k] = fmt.Sprint(v)
				next = append(next, c)
			}
		}
		jobs = next
	}
	return jobs
}

// The LKP program as lkp-tests lays one out today (programs/NAME/ with run,
// parse, meta.yaml and pkg/PKGBUILD; read from intel/lkp-tests' programs/
// hackbench, netperf, will-it-scale and netpipe, lib/reproduce-log.sh,
// bin/run-stats and sbin/dump-stat).
const lkpProgram = "lkp/programs/volanogo"

// lkpMeta is a program's meta.yaml: these keys and no others.
type lkpMeta struct {
	ShortDescription string            `yaml:"short_description"`
	Description      string            `yaml:"description"`
	Homepage         string            `yaml:"homepage"`
	Parameters       map[string]any    `yaml:"parameters"`
	Results          map[string]string `yaml:"results"`
}

// runParams are the parameters a run script declares as LKP reads them:
// its leading "# - name" lines.
func runParams(t *testing.T, path string) []string {
	t.Helper()
	script, err := os.ReadFile(path)
	require.NoError(t, err)
	var declared []string
	for _, m := range regexp.MustCompile(`(?m)^# - ([a-z_]+)$`).FindAllStringSubmatch(string(script), -1) {
		declared = append(declared, m[1])
	}
	return declared
}

// checkStats checks parse's output as LKP's dump-stat reads it: one
// "key: value" a line, no whitespace in the key, a number for the value;
// every key one that meta.yaml lists as a result (dump-stat prefixes the
// program's name), never a parameter of the job.
func checkStats(t *testing.T, out string, meta lkpMeta) map[string]float64 {
	t.Helper()
	kv := parseKeyValues(t, out)
	for k := range kv {
		assert.NotRegexp(t, `\s`, k)
		assert.Contains(t, meta.Results, "volanogo."+k, "parse prints %q, which meta.yaml does not list as a result", k)
		assert.NotContains(t, meta.Parameters, k, "a parameter is not a result")
	}
	return kv
}

func readLKPMeta(t *testing.T) lkpMeta {
	t.Helper()
	data, err := os.ReadFile(lkpProgram + "/meta.yaml")
	require.NoError(t, err)
	var meta lkpMeta
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&meta), "meta.yaml has lkp-tests' keys only")
	return meta
}

// lkpLib writes a stand-in for the part of lkp-tests that run sources
// ($LKP_SRC/lib/reproduce-log.sh: log_cmd prints the dated command, then
// runs it), unless LKP_SRC names a real lkp-tests checkout.
func lkpLib(t *testing.T) string {
	t.Helper()
	if src := os.Getenv("LKP_SRC"); src != "" {
		return src
	}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "lib"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lib", "reproduce-log.sh"), []byte(`log_cmd()
{
	echo "$(date +'%F %T')" "$@"
	echo "$@" >>"$TMP_RESULT_ROOT/reproduce.sh"
	"$@"
}
`), 0o644))
	return dir
}

// TestLKP reads the job file and the program, checks that the job's
// parameters are the run script's and meta.yaml's, and runs the script for
// two of the job's combinations (shortened: 2 rooms, 20 messages) on
// loopback; parse reads the result.
func TestLKP(t *testing.T) {
	data, err := os.ReadFile("lkp/jobs/volanogo.yaml")
	require.NoError(t, err)
	var job lkpJob
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&job))
	assert.Equal(t, "volanogo", job.Suite)
	assert.Equal(t, "volanogo", job.Testcase)
	assert.Equal(t, "benchmark", job.Category)

	meta := readLKPMeta(t)
	assert.NotEmpty(t, meta.ShortDescription)
	assert.NotEmpty(t, meta.Homepage)
	var params []string
	for k := range job.Params {
		params = append(params, k)
	}
	declared := runParams(t, lkpProgram+"/run")
	assert.ElementsMatch(t, declared, params, "the job's parameters are the run script's")
	assert.ElementsMatch(t, declared, slices.Collect(maps.Keys(meta.Parameters)), "meta.yaml's parameters are the run script's")
	for k := range meta.Results {
		assert.True(t, strings.HasPrefix(k, "volanogo."), "meta.yaml's results are named program.key: %q", k)
	}

	combos := expand(job.Params)
	require.Len(t, combos, 6, "3 room counts x 2 transports")
	bin := volanogo(t)
	lkpSrc := lkpLib(t)
	seen := map[string]bool{}
	for _, c := range combos {
		if seen[c["transport"]] {
			continue
		}
		seen[c["transport"]] = true
		t.Run(c["transport"], func(t *testing.T) {
			env := map[string]string{"VOLANOGO": bin, "TMP": t.TempDir(), "LKP_SRC": lkpSrc, "TMP_RESULT_ROOT": t.TempDir()}
			for k, v := range c {
				env[k] = v
			}
			env["rooms"], env["count"], env["runs"] = "2", "20", "2" // short runs, one counted
			out, errOut, code := runScriptWith(t, "bash", t.TempDir(), mustAbs(t, lkpProgram+"/run"), env, "")
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, bin+" load --serve --json", "log_cmd logs the command")
			stats, errOut, code := runScript(t, t.TempDir(), mustAbs(t, lkpProgram+"/parse"), nil, out)
			require.Equal(t, 0, code, errOut)
			kv := checkStats(t, stats, meta)
			assert.Equal(t, 1.0, kv["pass"], stats)
			assert.Positive(t, kv["msgs_per_sec"], stats)
			assert.Positive(t, kv["server_cpu_per_msg_us"], "--serve measures the server: %s", stats)
			assert.Positive(t, kv["client_cpu_per_msg_us"], stats)
			assert.Contains(t, kv, "failures")
			assert.Zero(t, kv["failures"])
			if s, ok := kv["score"]; ok {
				assert.Positive(t, s, "a score of 0 (runs under a second) is left out")
			}
		})
	}
}

// TestLKPPKGBUILD builds the package as makepkg would (build, then
// package, in bash with srcdir and pkgdir set), with this checkout as the
// source, and runs the binary from LKP's benchmark directory.
func TestLKPPKGBUILD(t *testing.T) {
	pkgbuild := mustAbs(t, lkpProgram+"/pkg/PKGBUILD")
	src, pkg := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(mustAbs(t, ".."), filepath.Join(src, "volanogo")))
	script := `set -e
. "$PKGBUILD"
[ "$pkgname" = volanogo ] || { echo "pkgname $pkgname"; exit 1; }
[ "${#source[@]}" = "${#sha256sums[@]}" ] || { echo "one checksum per source"; exit 1; }
for v in pkgver pkgrel url; do [ -n "${!v}" ] || { echo "no $v"; exit 1; }; done
[ "${#arch[@]}" -gt 0 ] && [ "${#license[@]}" -gt 0 ] || { echo "no arch or license"; exit 1; }
(build)
(package)
echo "$pkgver"
`
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Slack(3*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), "PKGBUILD="+pkgbuild, "srcdir="+src, "pkgdir="+pkg)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	version := strings.TrimSpace(string(out))
	bin := filepath.Join(pkg, "lkp", "benchmarks", "volanogo", "volanogo")
	out, err = exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), version, "the binary says the package's version")
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}

// TestLKPParser: results only, never the parameters or the bookkeeping of
// the line (rooms, users, count, runs, passed, run_id), no score of 0 (runs
// too short for one), no null (unknown) figure.
func TestLKPParser(t *testing.T) {
	meta := readLKPMeta(t)
	parse := mustAbs(t, lkpProgram+"/parse")
	out, _, code := runScript(t, t.TempDir(), parse, nil, "text before\n"+
		`{"volanogo": 1, "verdict": "fail", "exit": 1, "score": 0, "msgs_per_sec": 0, "server_cpu_per_msg_us": null, `+
		`"client_cpu_per_msg_us": 1.5e-05, "failures": 3, "runs": 1, "passed": 0, "rooms": 2, "users": 20, "count": 20, `+
		`"run_id": "x, \"y\": 1", "steps": [{"rooms": 2, "score": 0, "msgs_per_sec": 99}]}`+"\ntext after\n")
	require.Equal(t, 0, code)
	kv := checkStats(t, out, meta)
	assert.Equal(t, map[string]float64{"fail": 1, "msgs_per_sec": 0, "client_cpu_per_msg_us": 1.5e-05, "failures": 3}, kv)

	out, _, code = runScript(t, t.TempDir(), parse, nil,
		`{"volanogo": 1, "verdict": "pass", "exit": 0, "score": 214873, "msgs_per_sec": 214000.5, "server_cpu_per_msg_us": 4.1, `+
			`"client_cpu_per_msg_us": 4.5, "failures": 0, "runs": 4, "passed": 4, "rooms": 10, "users": 20, "count": 100, "run_id": "r", "steps": []}`+"\n")
	require.Equal(t, 0, code)
	assert.Equal(t, map[string]float64{"pass": 1, "score": 214873, "msgs_per_sec": 214000.5, "server_cpu_per_msg_us": 4.1,
		"client_cpu_per_msg_us": 4.5, "failures": 0}, checkStats(t, out, meta))

	_, errOut, code := runScript(t, t.TempDir(), parse, nil, "no result here\n")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no result line")
}

// TestShellSyntax: every script parses with its interpreter and is
// executable.
func TestShellSyntax(t *testing.T) {
	for _, s := range []struct{ sh, path string }{
		{"bash", lkpProgram + "/run"}, {"sh", lkpProgram + "/parse"}, {"bash", lkpProgram + "/pkg/PKGBUILD"},
		{"sh", "pts/volanogo-1.0.0/install.sh"}, {"sh", "pts/profile.sh"},
	} {
		out, err := exec.Command(s.sh, "-n", s.path).CombinedOutput()
		assert.NoError(t, err, "%s: %s", s.path, out)
		if strings.HasSuffix(s.path, "PKGBUILD") {
			continue // sourced, not run
		}
		fi, err := os.Stat(s.path)
		require.NoError(t, err)
		assert.NotZero(t, fi.Mode()&0o100, "%s is executable", s.path)
	}
}

// The Phoronix Test Suite's profile files, as far as the tests read them.
type ptsTestDefinition struct {
	Info struct {
		Title       string `xml:"Title"`
		AppVersion  string `xml:"AppVersion"`
		Description string `xml:"Description"`
		ResultScale string `xml:"ResultScale"`
		Proportion  string `xml:"Proportion"`
		TimesToRun  int    `xml:"TimesToRun"`
	} `xml:"TestInformation"`
	Profile struct {
		Version            string `xml:"Version"`
		SupportedPlatforms string `xml:"SupportedPlatforms"`
		SoftwareType       string `xml:"SoftwareType"`
		TestType           string `xml:"TestType"`
		License            string `xml:"License"`
	} `xml:"TestProfile"`
	Options []struct {
		DisplayName    string `xml:"DisplayName"`
		Identifier     string `xml:"Identifier"`
		ArgumentPrefix string `xml:"ArgumentPrefix"`
		Entries        []struct {
			Name  string `xml:"Name"`
			Value string `xml:"Value"`
		} `xml:"Menu>Entry"`
	} `xml:"TestSettings>Option"`
}

type ptsResultsDefinition struct {
	Parsers []ptsParser `xml:"ResultsParser"`
}

type ptsParser struct {
	OutputTemplate     string `xml:"OutputTemplate"`
	LineHint           string `xml:"LineHint"`
	ResultAfterString  string `xml:"ResultAfterString"`
	StripResultPostfix string `xml:"StripResultPostfix"`
	ResultScale        string `xml:"ResultScale"`
	ResultProportion   string `xml:"ResultProportion"`
	AppendToArgs       string `xml:"AppendToArgumentsDescription"`
	Importance         string `xml:"Importance"`
}

type ptsDownloads struct {
	Packages []struct {
		URL                  string `xml:"URL"`
		SHA256               string `xml:"SHA256"`
		FileName             string `xml:"FileName"`
		FileSize             int64  `xml:"FileSize"`
		PlatformSpecific     string `xml:"PlatformSpecific"`
		ArchitectureSpecific string `xml:"ArchitectureSpecific"`
	} `xml:"Downloads>Package"`
}

func readXML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal(data, v), path)
}

// parse is what the Phoronix Test Suite's result parser does with a
// ResultsParser of this kind (LineHint, ResultAfterString,
// StripResultPostfix): the last line of the log with the hint, split on
// spaces, the word after the ResultAfterString word, its postfix
// stripped; it must be a number.
func (p ptsParser) parse(log string) (float64, error) {
	var line string
	for l := range strings.Lines(log) {
		if strings.Contains(l, p.LineHint) {
			line = strings.TrimSpace(l)
		}
	}
	if line == "" {
		return 0, fmt.Errorf("no line with %q", p.LineHint)
	}
	line = strings.NewReplacer("(", " ", ")", " ", "\t", " ", "=", " = ").Replace(line)
	words := strings.Fields(line)
	i := slices.Index(words, p.ResultAfterString)
	if i < 0 {
		return 0, fmt.Errorf("no word %q in %q", p.ResultAfterString, line)
	}
	for _, w := range words[i+1:] {
		if slices.Contains([]string{":", ",", "-", "="}, w) {
			continue
		}
		w = strings.TrimSuffix(w, p.StripResultPostfix)
		return strconv.ParseFloat(w, 64)
	}
	return 0, fmt.Errorf("nothing after %q", p.ResultAfterString)
}

// archiveName is GoReleaser's name for a release archive
// (.goreleaser.yaml: {{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}).
func archiveName(version, goarch string) string {
	return fmt.Sprintf("volanogo_%s_linux_%s.tar.gz", version, goarch)
}

var ptsArch = map[string]string{"x86_64": "amd64", "aarch64": "arm64"}

// TestPTS reads the test profile, installs it as the Phoronix Test Suite
// would (the downloaded archive is made here from this checkout's binary),
// runs it for one option on loopback (shortened: 2 rooms, 20 messages) and
// parses the log with the profile's result parsers.
func TestPTS(t *testing.T) {
	const dir = "pts/volanogo-1.0.0"
	checkPTSSchema(t, dir+"/test-definition.xml", ptsTestProfileSchema)
	checkPTSSchema(t, dir+"/results-definition.xml", ptsResultsParserSchema)
	checkPTSSchema(t, dir+"/downloads.xml", ptsDownloadsSchema)
	var def ptsTestDefinition
	readXML(t, dir+"/test-definition.xml", &def)
	assert.Equal(t, "volanogo", def.Info.Title)
	assert.Equal(t, "HIB", def.Info.Proportion)
	assert.Equal(t, "Messages Per Second", def.Info.ResultScale)
	assert.Positive(t, def.Info.TimesToRun)
	assert.Equal(t, "1.0.0", def.Profile.Version)
	assert.Equal(t, "volanogo-"+def.Profile.Version, filepath.Base(dir), "the profile's directory carries its version")
	assert.Equal(t, "Linux", def.Profile.SupportedPlatforms)
	require.NotEmpty(t, def.Options)

	// Every option's arguments are flags of volanogo load.
	for _, o := range def.Options {
		require.NotEmpty(t, o.Entries, o.Identifier)
		for _, e := range o.Entries {
			args := append([]string{"load"}, strings.Fields(o.ArgumentPrefix+e.Value)...)
			root := cli.NewRoot(&cli.IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
			cmd, rest, err := root.Find(args)
			require.NoError(t, err)
			assert.NoError(t, cmd.ParseFlags(rest), "%s: %v", o.Identifier, args)
		}
	}

	// The downloads are the release's archives, by GoReleaser's names; the
	// release fills in their SHA256 and sizes (profile.sh, below).
	var dl ptsDownloads
	readXML(t, dir+"/downloads.xml", &dl)
	require.Len(t, dl.Packages, 2)
	for _, p := range dl.Packages {
		goarch, ok := ptsArch[p.ArchitectureSpecific]
		require.True(t, ok, p.ArchitectureSpecific)
		assert.Equal(t, archiveName(def.Info.AppVersion, goarch), p.FileName)
		assert.Equal(t, "https://github.com/volanogo/volanogo/releases/download/v"+def.Info.AppVersion+"/"+p.FileName, p.URL)
	}
	install, err := os.ReadFile(dir + "/install.sh")
	require.NoError(t, err)
	assert.Contains(t, string(install), "volanogo_"+def.Info.AppVersion+"_linux_", "install.sh extracts the archive downloads.xml names")
	assert.Regexp(t, `load --serve --json .*-runs 4 --discard 1`, string(install), "a trial keeps the run rule: 4 runs, the first discarded")

	var rd ptsResultsDefinition
	readXML(t, dir+"/results-definition.xml", &rd)
	require.Len(t, rd.Parsers, 3)
	for _, p := range rd.Parsers {
		assert.Contains(t, p.OutputTemplate, "#_RESULT_#")
		assert.Contains(t, p.OutputTemplate, p.LineHint, "PTS searches the log for the LineHint found in the template")
		assert.Contains(t, p.OutputTemplate, p.ResultAfterString+" #_RESULT_#")
	}
	assert.Empty(t, rd.Parsers[0].Importance, "messages per second is the primary result")
	for _, p := range rd.Parsers[1:] {
		assert.Equal(t, "Secondary", p.Importance, p.ResultAfterString)
	}

	if runtime.GOOS != "linux" {
		t.Skip("the profile installs a linux binary")
	}
	goarch := runtime.GOARCH
	if !slices.Contains([]string{"amd64", "arm64"}, goarch) {
		t.Skip("no release for " + goarch)
	}
	// A release's dist (both archives, of this checkout's binary, and
	// checksums.txt) and the profile that profile.sh writes for it.
	const version = "0.1.0"
	dist, out := t.TempDir(), t.TempDir()
	var sums strings.Builder
	for _, a := range []string{"amd64", "arm64"} {
		name := archiveName(version, a)
		writeArchive(t, filepath.Join(dist, name), volanogo(t))
		data, err := os.ReadFile(filepath.Join(dist, name))
		require.NoError(t, err)
		fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(data), name)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dist, "checksums.txt"), []byte(sums.String()), 0o644))
	_, errOut, code := runScript(t, t.TempDir(), mustAbs(t, "pts/profile.sh"), nil, "", version, dist, out)
	require.Equal(t, 0, code, errOut)
	published := filepath.Join(out, "volanogo-1.0.0")
	checkPTSSchema(t, filepath.Join(published, "downloads.xml"), ptsDownloadsSchema)
	var pub ptsDownloads
	readXML(t, filepath.Join(published, "downloads.xml"), &pub)
	require.Len(t, pub.Packages, 2)
	for _, p := range pub.Packages {
		data, err := os.ReadFile(filepath.Join(dist, p.FileName))
		require.NoError(t, err, "downloads.xml names %s", p.FileName)
		assert.Equal(t, fmt.Sprintf("%x", sha256.Sum256(data)), p.SHA256, p.FileName)
		assert.Equal(t, int64(len(data)), p.FileSize, p.FileName)
	}

	// Install as PTS does: the downloaded file (checked against SHA256
	// above) in the install directory, install.sh run there, HOME the
	// install directory.
	installDir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(dist, archiveName(version, goarch)))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(installDir, archiveName(version, goarch)), data, 0o644))
	_, errOut, code = runScript(t, installDir, filepath.Join(published, "install.sh"), map[string]string{"HOME": installDir}, "")
	require.Equal(t, 0, code, errOut)

	logFile := filepath.Join(installDir, "result.log")
	opt := def.Options[0]
	args := strings.Fields(opt.ArgumentPrefix + "2") // -rooms 2: a short run
	args = append(args, "-count", "20")
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Slack(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "./volanogo", args...)
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = installDir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + installDir, "LOG_FILE=" + logFile}
	combined, err := cmd.CombinedOutput()
	require.NoError(t, err, string(combined))
	status, err := os.ReadFile(filepath.Join(installDir, "test-exit-status"))
	require.NoError(t, err)
	text, _ := os.ReadFile(filepath.Join(installDir, "volanogo-text.log"))
	require.Equal(t, "0", strings.TrimSpace(string(status)), string(text))

	log, err := os.ReadFile(logFile)
	require.NoError(t, err)
	for _, p := range rd.Parsers {
		v, err := p.parse(string(log))
		require.NoError(t, err, "%s: %s", p.ResultAfterString, log)
		assert.Positive(t, v, "%s: %s", p.ResultAfterString, log)
	}
}

// writeArchive makes a release archive holding the binary as volanogo.
func writeArchive(t *testing.T, path, bin string) {
	t.Helper()
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "volanogo", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}))
	_, err = tw.Write(data)
	require.NoError(t, err)
	for _, f := range []string{"README.md", "LICENSE"} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}))
		_, err = tw.Write([]byte("x"))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

func TestPTSParser(t *testing.T) {
	p := ptsParser{LineHint: `{"volanogo": 1,`, ResultAfterString: `"msgs_per_sec":`, StripResultPostfix: ","}
	v, err := p.parse("x\n{\"volanogo\": 1, \"msgs_per_sec\": 12.5, \"y\": 2}\n")
	require.NoError(t, err)
	assert.Equal(t, 12.5, v)
	_, err = p.parse("nothing\n")
	assert.Error(t, err)
	p.ResultAfterString = `"server_cpu_per_msg_us":`
	_, err = p.parse("{\"volanogo\": 1, \"server_cpu_per_msg_us\": null, \"y\": 2}\n")
	assert.Error(t, err, "null is not a result")
}

// The PTS profile's schemas as far as volanogo's profile goes: for each
// element, its children in the order of the XSD's sequence, and the values
// its enumerations allow. Read from phoronix-test-suite's
// pts-core/openbenchmarking.org/schemas/test-profile.xsd,
// results-parser.xsd, test-profile-downloads.xsd and types.xsd.
type ptsSchema struct {
	children map[string][]string
	enums    map[string][]string
	patterns map[string]string
}

var ptsTestProfileSchema = ptsSchema{
	children: map[string][]string{
		"":                  {"PhoronixTestSuite"},
		"PhoronixTestSuite": {"TestInformation", "TestProfile", "TestSettings"},
		"PhoronixTestSuite/TestInformation": {"Title", "AppVersion", "Description", "ResultScale", "Proportion",
			"ResultQuantifier", "DisplayFormat", "SubTitle", "Executable", "TimesToRun", "IgnoreRuns",
			"InstallationAgreement", "PreInstallMessage", "PostInstallMessage"},
		"PhoronixTestSuite/TestProfile": {"Version", "SupportedPlatforms", "SoftwareType", "TestType", "License",
			"Status", "SupportedArchitectures", "ExternalDependencies", "Extends", "RequiresRoot",
			"RequiresRootInstall", "RequiresDisplay", "RequiresNetwork", "InstallRequiresInternet",
			"RequiresInternet", "EnvironmentSize", "EnvironmentTestingSize", "EstimatedTimePerRun", "ProjectURL",
			"RepositoryURL", "RequiresCoreVersionMin", "RequiresCoreVersionMax", "InternalTags", "Maintainer",
			"AllowResultsSharing", "AutoSaveResults", "RemoveInstallDirectoryOnReinstall", "SystemDependencies"},
		"PhoronixTestSuite/TestSettings":                   {"Default", "Option"},
		"PhoronixTestSuite/TestSettings/Default":           {"Arguments", "PostArguments", "AllowCacheShare", "MinimumLength", "MaximumLength"},
		"PhoronixTestSuite/TestSettings/Option":            {"DisplayName", "Identifier", "ArgumentPrefix", "ArgumentPostfix", "DefaultEntry", "Message", "Menu"},
		"PhoronixTestSuite/TestSettings/Option/Menu":       {"Entry"},
		"PhoronixTestSuite/TestSettings/Option/Menu/Entry": {"Name", "Value", "Message"},
	},
	enums: map[string][]string{
		"PhoronixTestSuite/TestInformation/Proportion": {"LIB", "HIB", "ABSTRACT"},
		"PhoronixTestSuite/TestProfile/SoftwareType":   {"BaseTestProfile", "Utility", "Simulator", "Scientific", "Benchmark", "Application", "Game"},
		"PhoronixTestSuite/TestProfile/TestType":       {"System", "Processor", "Disk", "Graphics", "Memory", "Network", "OS", "Other"},
		"PhoronixTestSuite/TestProfile/License":        {"Free", "Non-Free", "Retail", "Restricted"},
		"PhoronixTestSuite/TestProfile/Status":         {"Verified", "Unverified", "Private", "Broken", "Experimental", "Deprecated"},
	},
	patterns: map[string]string{
		"PhoronixTestSuite/TestProfile/Version":         `^[0-9]\.[0-9]{1,2}\.[0-9]{1,2}$`,
		"PhoronixTestSuite/TestInformation/TimesToRun":  `^[1-9][0-9]*$`,
		"PhoronixTestSuite/TestProfile/ProjectURL":      `^https?://`,
		"PhoronixTestSuite/TestProfile/EnvironmentSize": `^[0-9]+(\.[0-9]+)?$`,
	},
}

var ptsResultsParserSchema = ptsSchema{
	children: map[string][]string{
		"":                  {"PhoronixTestSuite"},
		"PhoronixTestSuite": {"ResultsParser", "ImageParser", "SystemMonitor", "ExtraData"},
		"PhoronixTestSuite/ResultsParser": {"OutputTemplate", "MatchToTestArguments", "ResultKey", "LineHint",
			"LineBeforeHint", "LineAfterHint", "ResultBeforeString", "ResultAfterString", "StripFromResult",
			"StripResultPostfix", "MultiMatch", "DivideResultBy", "DivideResultDivisor", "MultiplyResultBy",
			"ResultScale", "ResultProportion", "DisplayFormat", "ResultPrecision", "ArgumentsDescription",
			"AppendToArgumentsDescription", "FileFormat", "TurnCharsToSpace", "DeleteOutputBefore",
			"DeleteOutputAfter", "Importance"},
	},
	enums: map[string][]string{"PhoronixTestSuite/ResultsParser/ResultProportion": {"LIB", "HIB"}},
}

var ptsDownloadsSchema = ptsSchema{
	children: map[string][]string{
		"":                            {"PhoronixTestSuite"},
		"PhoronixTestSuite":           {"Downloads"},
		"PhoronixTestSuite/Downloads": {"Package"},
		"PhoronixTestSuite/Downloads/Package": {"URL", "MD5", "SHA256", "FileName", "FileSize", "PlatformSpecific",
			"ArchitectureSpecific", "Optional"},
	},
	patterns: map[string]string{
		"PhoronixTestSuite/Downloads/Package/SHA256":   `^[0-9a-f]{64}$`,
		"PhoronixTestSuite/Downloads/Package/FileSize": `^[1-9][0-9]*$`,
	},
}

// checkPTSSchema checks that every element of the file is one its parent
// allows, in the schema's order (a repeated element may repeat), and that
// the values of enumerated and patterned elements are allowed ones.
func checkPTSSchema(t *testing.T, path string, schema ptsSchema) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := xml.NewDecoder(bytes.NewReader(data))
	var stack []string
	last := map[string]int{"": -1}
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch el := tok.(type) {
		case xml.StartElement:
			parent := strings.Join(stack, "/")
			allowed, ok := schema.children[parent]
			require.True(t, ok, "%s: <%s> has no children in the schema, found <%s>", path, parent, el.Name.Local)
			i := slices.Index(allowed, el.Name.Local)
			require.GreaterOrEqual(t, i, 0, "%s: <%s> is not allowed in <%s>", path, el.Name.Local, parent)
			require.GreaterOrEqual(t, i, last[parent], "%s: <%s> comes too late in <%s>: the schema's order is %v", path, el.Name.Local, parent, allowed)
			last[parent] = i
			stack = append(stack, el.Name.Local)
			last[strings.Join(stack, "/")] = -1
			text.Reset()
		case xml.CharData:
			text.Write(el)
		case xml.EndElement:
			key := strings.Join(stack, "/")
			v := strings.TrimSpace(text.String())
			if e, ok := schema.enums[key]; ok {
				assert.Contains(t, e, v, "%s: <%s>", path, key)
			}
			if p, ok := schema.patterns[key]; ok {
				assert.Regexp(t, p, v, "%s: <%s>", path, key)
			}
			stack = stack[:len(stack)-1]
			text.Reset()
		}
	}
	assert.Empty(t, stack, "%s: unclosed elements", path)
}
