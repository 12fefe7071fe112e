package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const root = "../.."

// file is one entry of an image's file system.
type file struct {
	hdr  *tar.Header
	data []byte
}

// files reads an image's one layer.
func files(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1, "one layer: the binary and the few files around it")
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	out := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[strings.TrimSuffix(h.Name, "/")] = file{hdr: h, data: data}
	}
	return out
}

var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// TestImage builds the image as README.md says, into an OCI layout, and
// inspects it as a registry and a container runtime would see it.
func TestImage(t *testing.T) {
	out := t.TempDir()
	var log bytes.Buffer
	require.NoError(t, run([]string{"-root", root, "-o", out, "-version", "0.1.0-test"}, &log), log.String())

	// The layout names one multi-platform index by its tag.
	lp, err := layout.FromPath(out)
	require.NoError(t, err)
	top, err := lp.ImageIndex()
	require.NoError(t, err)
	topm, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, topm.Manifests, 1)
	assert.Equal(t, "0.1.0-test", topm.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	idx, err := top.ImageIndex(topm.Manifests[0].Digest)
	require.NoError(t, err)
	require.NoError(t, validate.Index(idx), "every blob present, every digest right")
	im, err := idx.IndexManifest()
	require.NoError(t, err)

	var platforms []string
	for _, desc := range im.Manifests {
		require.NotNil(t, desc.Platform)
		plat := desc.Platform.OS + "/" + desc.Platform.Architecture
		platforms = append(platforms, plat)
		t.Run(plat, func(t *testing.T) {
			img, err := idx.Image(desc.Digest)
			require.NoError(t, err)
			cf, err := img.ConfigFile()
			require.NoError(t, err)

			// The architecture: the platform, the configuration and the
			// binary's ELF header agree.
			assert.Equal(t, desc.Platform.OS, cf.OS)
			assert.Equal(t, desc.Platform.Architecture, cf.Architecture)
			fs := files(t, img)
			bin, ok := fs["usr/local/bin/volanogo"]
			require.True(t, ok, "no binary at the entrypoint")
			ef, err := elf.NewFile(bytes.NewReader(bin.data))
			require.NoError(t, err)
			assert.Equal(t, elfMachine[cf.Architecture], ef.Machine)
			for _, p := range ef.Progs {
				assert.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no dynamic loader")
			}
			assert.EqualValues(t, 0o755, bin.hdr.Mode)

			// The entrypoint is the binary.
			assert.Equal(t, []string{"/usr/local/bin/volanogo"}, cf.Config.Entrypoint)

			// The user is not root, and can work: a home it owns, a /tmp.
			u, g, ok := strings.Cut(cf.Config.User, ":")
			require.True(t, ok, "user:group, numeric, so that runAsNonRoot can check it: %q", cf.Config.User)
			uidN, err := strconv.Atoi(u)
			require.NoError(t, err)
			_, err = strconv.Atoi(g)
			require.NoError(t, err)
			assert.NotZero(t, uidN, "non-root")
			home := fs[strings.TrimPrefix(cf.Config.WorkingDir, "/")]
			require.NotNil(t, home.hdr, "working directory %s", cf.Config.WorkingDir)
			assert.Equal(t, uidN, home.hdr.Uid, "the user owns its working directory")
			require.NotNil(t, fs["tmp"].hdr)
			assert.EqualValues(t, 0o1777, fs["tmp"].hdr.Mode)
			assert.Contains(t, string(fs["etc/passwd"].data), ":"+u+":"+g+":")

			// The CA certificates, where Go's crypto/x509 reads them, so
			// that a wss:// target's certificate is verified; the time zones.
			pool := x509.NewCertPool()
			require.NotNil(t, fs["etc/ssl/certs/ca-certificates.crt"].hdr, "no CA certificates")
			assert.True(t, pool.AppendCertsFromPEM(fs["etc/ssl/certs/ca-certificates.crt"].data), "no certificate parses")
			utc := fs["usr/share/zoneinfo/UTC"]
			require.NotNil(t, utc.hdr, "no time zone database")
			if utc.hdr.Typeflag == tar.TypeReg {
				_, err := time.LoadLocationFromTZData("UTC", utc.data)
				assert.NoError(t, err)
			}
			paris := fs["usr/share/zoneinfo/Europe/Paris"]
			require.NotNil(t, paris.hdr, "a named zone")
			if paris.hdr.Typeflag == tar.TypeReg {
				loc, err := time.LoadLocationFromTZData("Europe/Paris", paris.data)
				require.NoError(t, err)
				_, off := time.Date(2026, 7, 1, 12, 0, 0, 0, loc).Zone()
				assert.Equal(t, 2*3600, off, "summer time in Paris")
			}

			assert.Equal(t, "0.1.0-test", cf.Config.Labels["org.opencontainers.image.version"])
			assert.Equal(t, "volanogo", cf.Config.Labels["org.opencontainers.image.title"])

			// On this machine's architecture, the binary runs and is the
			// version the image says.
			if cf.Architecture == runtime.GOARCH && runtime.GOOS == "linux" {
				path := filepath.Join(t.TempDir(), "volanogo")
				require.NoError(t, os.WriteFile(path, bin.data, 0o755))
				got, err := exec.Command(path, "version").CombinedOutput()
				require.NoError(t, err, string(got))
				assert.Contains(t, string(got), "0.1.0-test")
			}
		})
	}
	assert.ElementsMatch(t, DefaultPlatforms, platforms)
}

// TestDockerfileAgrees: the release's image (packaging/image/Dockerfile,
// built by GoReleaser) has the entrypoint, user and working directory of
// the one this program assembles.
func TestDockerfileAgrees(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "packaging/image/Dockerfile"))
	require.NoError(t, err)
	instr := map[string]string{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		instr[k] = v
	}
	assert.Regexp(t, regexp.MustCompile(`^(scratch|gcr\.io/distroless/static[-a-z0-9]*:nonroot)$`), instr["FROM"], "a minimal base")
	assert.Equal(t, `["`+Entrypoint+`"]`, instr["ENTRYPOINT"])
	assert.Equal(t, User, instr["USER"])
	assert.Equal(t, WorkDir, instr["WORKDIR"])
	assert.Contains(t, instr["COPY"], Entrypoint)
}

// TestModuleStaysApart: go-containerregistry is this module's, not
// volanogo's.
func TestModuleStaysApart(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "go-containerregistry")
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"extra"}, {"-root", root, "-o", "", "-platforms", "windows/amd64"},
		{"-root", root, "-o", "", "-bin", "linux/amd64"}} {
		err := run(args, io.Discard)
		var ue usageError
		assert.True(t, errors.As(err, &ue), "%v: %v", args, err)
	}
}

// TestPrebuiltBinary: -bin takes GoReleaser's binaries instead of
// compiling.
func TestPrebuiltBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "volanogo")
	require.NoError(t, os.WriteFile(bin, []byte("not really"), 0o755))
	idx, err := Build(Options{Root: root, Platforms: []string{"linux/arm64"}, Version: "x",
		Binaries: map[string]string{"linux/arm64": bin}, CABundle: CAPath, ZoneInfo: ZoneInfoPath})
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	img, err := idx.Image(im.Manifests[0].Digest)
	require.NoError(t, err)
	assert.Equal(t, "not really", string(files(t, img)["usr/local/bin/volanogo"].data))
}

// TestNoCertificates: without the CA certificates or the time zones to put
// in the image, the build stops and says which package brings them.
func TestNoCertificates(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "volanogo")
	require.NoError(t, os.WriteFile(bin, []byte("not really"), 0o755))
	o := Options{Root: root, Platforms: []string{"linux/amd64"}, Version: "x",
		Binaries: map[string]string{"linux/amd64": bin}, CABundle: filepath.Join(t.TempDir(), "none.crt"), ZoneInfo: ZoneInfoPath}
	_, err := Build(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "apt-get install ca-certificates")
	o.CABundle, o.ZoneInfo = CAPath, t.TempDir()
	_, err = Build(o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "apt-get install tzdata")
}
