package packaging

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"fmt"
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
func runScript(t *testing.T, dir, script string, env map[string]string, stdin string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Slack(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", script)
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

// TestLKP reads the job file, checks that its parameters are the test
// script's, and runs the script for two of the job's combinations
// (shortened: 2 rooms, 20 messages, one run) on loopback; the stats
// script reads the result.
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

	// The script declares its parameters as LKP reads them ("# - name").
	script, err := os.ReadFile("lkp/tests/volanogo")
	require.NoError(t, err)
	var declared []string
	for _, m := range regexp.MustCompile(`(?m)^# - ([a-z_]+)$`).FindAllStringSubmatch(string(script), -1) {
		declared = append(declared, m[1])
	}
	var params []string
	for k := range job.Params {
		params = append(params, k)
	}
	assert.ElementsMatch(t, declared, params, "the job's parameters are the script's")

	combos := expand(job.Params)
	require.Len(t, combos, 6, "3 room counts x 2 transports")
	bin := volanogo(t)
	seen := map[string]bool{}
	for _, c := range combos {
		if seen[c["transport"]] {
			continue
		}
		seen[c["transport"]] = true
		t.Run(c["transport"], func(t *testing.T) {
			env := map[string]string{"VOLANOGO": bin, "TMP": t.TempDir()}
			for k, v := range c {
				env[k] = v
			}
			env["rooms"], env["count"], env["runs"] = "2", "20", "1" // a short run
			out, errOut, code := runScript(t, t.TempDir(), mustAbs(t, "lkp/tests/volanogo"), env, "")
			require.Equal(t, 0, code, errOut)
			stats, errOut, code := runScript(t, t.TempDir(), mustAbs(t, "lkp/stats/volanogo"), nil, out)
			require.Equal(t, 0, code, errOut)
			kv := parseKeyValues(t, stats)
			assert.Equal(t, 1.0, kv["pass"], stats)
			assert.Positive(t, kv["msgs_per_sec"], stats)
			assert.Positive(t, kv["server_cpu_per_msg_us"], "--serve measures the server: %s", stats)
			assert.Positive(t, kv["client_cpu_per_msg_us"], stats)
			assert.Contains(t, kv, "failures")
			assert.Zero(t, kv["failures"])
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}

func TestLKPStatsParser(t *testing.T) {
	stats := mustAbs(t, "lkp/stats/volanogo")
	out, _, code := runScript(t, t.TempDir(), stats, nil, "text before\n"+
		`{"volanogo": 1, "verdict": "fail", "exit": 1, "score": 0, "msgs_per_sec": 0, "server_cpu_per_msg_us": null, `+
		`"client_cpu_per_msg_us": 1.5e-05, "failures": 3, "runs": 1, "passed": 0, "rooms": 2, "users": 20, "count": 20, `+
		`"run_id": "x, \"y\": 1", "steps": [{"rooms": 2, "score": 0, "msgs_per_sec": 99}]}`+"\ntext after\n")
	require.Equal(t, 0, code)
	kv := parseKeyValues(t, out)
	assert.Equal(t, map[string]float64{"fail": 1, "score": 0, "msgs_per_sec": 0, "client_cpu_per_msg_us": 1.5e-05,
		"failures": 3, "runs": 1, "passed": 0, "rooms": 2, "users": 20, "count": 20}, kv)
	_, errOut, code := runScript(t, t.TempDir(), stats, nil, "no result here\n")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no result line")
}

// TestShellSyntax: every script parses (the pack script downloads, so it
// is not run here).
func TestShellSyntax(t *testing.T) {
	for _, s := range []string{"lkp/tests/volanogo", "lkp/stats/volanogo", "lkp/pack/volanogo", "pts/volanogo-1.0.0/install.sh"} {
		out, err := exec.Command("sh", "-n", s).CombinedOutput()
		assert.NoError(t, err, "%s: %s", s, out)
		fi, err := os.Stat(s)
		require.NoError(t, err)
		assert.NotZero(t, fi.Mode()&0o100, "%s is executable", s)
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
	ResultImportance   string `xml:"ResultImportance"`
	AppendToArgs       string `xml:"AppendToArgumentsDescription"`
}

type ptsDownloads struct {
	Packages []struct {
		URL                  string `xml:"URL"`
		FileName             string `xml:"FileName"`
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

	// The downloads are the release's archives, by GoReleaser's names.
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

	var rd ptsResultsDefinition
	readXML(t, dir+"/results-definition.xml", &rd)
	require.Len(t, rd.Parsers, 3)
	for _, p := range rd.Parsers {
		assert.Contains(t, p.OutputTemplate, "#_RESULT_#")
		assert.Contains(t, p.OutputTemplate, p.LineHint, "PTS searches the log for the LineHint found in the template")
		assert.Contains(t, p.OutputTemplate, p.ResultAfterString+" #_RESULT_#")
	}
	assert.Empty(t, rd.Parsers[0].ResultImportance, "messages per second is the primary result")

	if runtime.GOOS != "linux" {
		t.Skip("the profile installs a linux binary")
	}
	goarch := runtime.GOARCH
	if !slices.Contains([]string{"amd64", "arm64"}, goarch) {
		t.Skip("no release for " + goarch)
	}
	// Install as PTS does: the downloaded file in the install directory,
	// install.sh run there, HOME the install directory.
	installDir := t.TempDir()
	writeArchive(t, filepath.Join(installDir, archiveName(def.Info.AppVersion, goarch)), volanogo(t))
	_, errOut, code := runScript(t, installDir, mustAbs(t, dir+"/install.sh"), map[string]string{"HOME": installDir}, "")
	require.Equal(t, 0, code, errOut)

	logFile := filepath.Join(installDir, "result.log")
	opt := def.Options[0]
	args := strings.Fields(opt.ArgumentPrefix + "2") // -rooms 2: a short run
	args = append(args, "-count", "20")
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Slack(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "./volanogo", args...)
	cmd.Dir = installDir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + installDir, "LOG_FILE=" + logFile}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
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
