// Command image builds volanogo's container image without a container
// daemon and without downloading a base image: it compiles the static
// linux binary for each platform (or takes prebuilt ones), puts it in one
// layer with the few files a non-root process needs, and writes a
// multi-platform OCI image layout (or pushes it to a registry).
//
// The image is the one packaging/image/Dockerfile describes for the
// release (GoReleaser, on distroless static): entrypoint
// /usr/local/bin/volanogo, user nonroot (65532:65532), working directory
// /home/nonroot, /tmp writable by all, the OCI labels with the version,
// and as distroless has them, the CA certificates (so that a wss:// target's
// certificate is verified) and the time zone database. It is assembled
// from nothing (scratch): the certificates and zones are the build
// machine's (Debian's ca-certificates and tzdata packages by default).
//
// From the repository root:
//
//	go -C tools/image run . -o dist/image -version 0.1.0
//
// (Paths are relative to the repository root wherever it is run from.)
// Then push it with any OCI tool, for example
// `skopeo copy --all oci:dist/image:0.1.0 docker://HOST/volanogo:0.1.0` or
// `crane push --index dist/image HOST/volanogo:0.1.0`.
//
// It is its own Go module so that go-containerregistry stays out of
// volanogo's go.mod.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is; packaging/image/Dockerfile says the same (a test
// checks that they agree).
const (
	// Entrypoint is the volanogo binary, so that the image's arguments are
	// volanogo's: `docker run IMAGE load ...`, Kubernetes args.
	Entrypoint = "/usr/local/bin/volanogo"
	// User is distroless's nonroot.
	User    = "65532:65532"
	uid     = 65532
	WorkDir = "/home/nonroot"
	// Module is volanogo's main module, whose ./cmd/volanogo is built.
	Module = "github.com/volanogo/volanogo"
)

// DefaultPlatforms are the release's.
var DefaultPlatforms = []string{"linux/amd64", "linux/arm64"}

// Options say what to build.
type Options struct {
	Root      string   // the repository root (volanogo's main module)
	Out       string   // the OCI layout directory to write ("" none)
	Platforms []string // os/arch
	Version   string   // the image's tag and version label
	Commit    string
	Created   time.Time
	// Binaries maps a platform to a prebuilt binary to use instead of
	// compiling one.
	Binaries map[string]string
	// CABundle is the PEM file of CA certificates put at CAPath; ZoneInfo
	// the time zone database directory put at ZoneInfoPath.
	CABundle, ZoneInfo string
	Log                io.Writer
}

// Where the image keeps the CA certificates and the time zones: the paths
// Go's crypto/x509 and time packages read first on Linux, and Debian's.
const (
	CAPath       = "/etc/ssl/certs/ca-certificates.crt"
	ZoneInfoPath = "/usr/share/zoneinfo"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

func run(args []string, log io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(log)
	out := fs.String("o", "dist/image", "OCI image layout to write (relative to the repository root)")
	platforms := fs.String("platforms", strings.Join(DefaultPlatforms, ","), "os/arch list")
	version := fs.String("version", "dev", "the image's version: its tag, its version label, and the binary's")
	bins := fs.String("bin", "", "prebuilt binaries instead of compiling: os/arch=path,... (GoReleaser's dist/)")
	root := fs.String("root", "", "the repository root (default: found from the working directory)")
	ca := fs.String("ca-bundle", CAPath, "PEM file of the CA certificates the image trusts (Debian: ca-certificates)")
	zones := fs.String("zoneinfo", ZoneInfoPath, "time zone database to copy into the image (Debian: tzdata)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	o := Options{Root: *root, Platforms: splitList(*platforms), Version: *version, Binaries: map[string]string{},
		CABundle: *ca, ZoneInfo: *zones, Log: log}
	if o.Root == "" {
		r, err := findRoot()
		if err != nil {
			return err
		}
		o.Root = r
	}
	if *out != "" {
		o.Out = *out
		if !filepath.IsAbs(o.Out) {
			o.Out = filepath.Join(o.Root, o.Out)
		}
	}
	for _, kv := range splitList(*bins) {
		plat, path, ok := strings.Cut(kv, "=")
		if !ok {
			return usageError{fmt.Errorf("-bin: %q is not os/arch=path", kv)}
		}
		o.Binaries[plat] = path
	}
	o.Commit, o.Created = commitInfo(o.Root)
	_, err := Build(o)
	return err
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// findRoot walks up from the working directory to volanogo's go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module "+Module+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside volanogo's repository (no go.mod of " + Module + " above); give -root")
		}
		dir = parent
	}
}

// commitInfo is the checkout's commit and its time (the image's creation
// time, so that the same commit gives the same image), when git knows.
// SOURCE_DATE_EPOCH overrides the time.
func commitInfo(root string) (string, time.Time) {
	var commit string
	created := time.Unix(0, 0).UTC()
	if out, err := exec.Command("git", "-C", root, "log", "-1", "--format=%H %ct").Output(); err == nil {
		if h, ts, ok := strings.Cut(strings.TrimSpace(string(out)), " "); ok {
			commit = h
			if s, err := strconv.ParseInt(ts, 10, 64); err == nil {
				created = time.Unix(s, 0).UTC()
			}
		}
	}
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil {
			created = time.Unix(s, 0).UTC()
		}
	}
	return commit, created
}

// Build makes the multi-platform image and, when o.Out is set, writes it
// as an OCI image layout whose index.json names it o.Version.
func Build(o Options) (v1.ImageIndex, error) {
	if len(o.Platforms) == 0 {
		return nil, usageError{errors.New("no platform")}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, plat := range o.Platforms {
		goos, goarch, ok := strings.Cut(plat, "/")
		if !ok || goos != "linux" {
			return nil, usageError{fmt.Errorf("platform %q: want linux/ARCH", plat)}
		}
		bin, ok := o.Binaries[plat]
		if !ok {
			dir, err := os.MkdirTemp("", "volanogo-image-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(dir)
			bin = filepath.Join(dir, "volanogo")
			if err := compile(o, goarch, bin); err != nil {
				return nil, err
			}
		}
		img, err := Image(o, goarch, bin)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", plat, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: goarch}},
		})
	}
	if o.Out != "" {
		if err := os.RemoveAll(o.Out); err != nil {
			return nil, err
		}
		p, err := layout.Write(o.Out, empty.Index)
		if err != nil {
			return nil, err
		}
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.Version})); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "wrote %s (%s, tag %s)\n", o.Out, strings.Join(o.Platforms, ", "), o.Version)
	}
	return idx, nil
}

// compile builds the static linux binary as the release does
// (.goreleaser.yaml: CGO_ENABLED=0, -trimpath, the version variables).
func compile(o Options, goarch, out string) error {
	pkg := Module + "/internal/buildinfo"
	ldflags := fmt.Sprintf("-s -w -X %s.Version=%s -X %s.Commit=%s -X %s.Date=%s",
		pkg, o.Version, pkg, o.Commit, pkg, o.Created.Format(time.RFC3339))
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/volanogo")
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch, "GOFLAGS=-buildvcs=false")
	cmd.Stdout, cmd.Stderr = o.Log, o.Log
	fmt.Fprintf(o.Log, "go build linux/%s\n", goarch)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build linux/%s: %w", goarch, err)
	}
	return nil
}

// Image is one platform's image: the binary at bin in one layer, and the
// configuration.
func Image(o Options, goarch, bin string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	certs, err := os.ReadFile(o.CABundle)
	if err != nil {
		return nil, fmt.Errorf("CA certificates (-ca-bundle; apt-get install ca-certificates): %w", err)
	}
	if !bytes.Contains(certs, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("CA certificates %s: no PEM certificate in it", o.CABundle)
	}
	if _, err := os.Stat(filepath.Join(o.ZoneInfo, "UTC")); err != nil {
		return nil, fmt.Errorf("time zones (-zoneinfo; apt-get install tzdata): %w", err)
	}
	rootfs, err := rootFS(data, certs, o.ZoneInfo, o.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(rootfs)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", goarch
	cf.Created = v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{Entrypoint},
		Cmd:        []string{"--help"},
		User:       User,
		WorkingDir: WorkDir,
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Labels:     Labels(o),
	}
	cf.History = []v1.History{{Created: cf.Created, CreatedBy: "volanogo tools/image", Comment: "the static volanogo binary"}}
	return mutate.ConfigFile(img, cf)
}

// Labels are the OCI labels the release's image has too (.goreleaser.yaml).
func Labels(o Options) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "volanogo",
		"org.opencontainers.image.description": "The VolanoMark chat-server benchmark in Go",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.created":     o.Created.Format(time.RFC3339),
		"org.opencontainers.image.source":      "https://github.com/volanogo/volanogo",
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
	if o.Commit != "" {
		l["org.opencontainers.image.revision"] = o.Commit
	}
	return l
}

// rootFS is the layer's tar: the binary, the few files that a non-root
// process expects (its user in /etc/passwd, a home to work in, a /tmp),
// the CA certificates and the time zone database (regular files and
// symbolic links, as tzdata lays them out).
func rootFS(bin, certs []byte, zoneinfo string, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: owner, Gid: owner, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	zones := func() error {
		base := strings.TrimPrefix(ZoneInfoPath, "/")
		return filepath.WalkDir(zoneinfo, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(zoneinfo, path)
			if err != nil {
				return err
			}
			name := filepath.ToSlash(filepath.Join(base, rel))
			switch {
			case d.IsDir():
				return dir(name, 0o755, 0)
			case d.Type()&os.ModeSymlink != 0:
				target, err := os.Readlink(path)
				if err != nil {
					return err
				}
				return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: mtime, Format: tar.FormatPAX})
			case d.Type().IsRegular():
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				return file(name, 0o644, data)
			}
			return nil
		})
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")) },
		func() error { return dir("etc/ssl", 0o755, 0) },
		func() error { return dir("etc/ssl/certs", 0o755, 0) },
		func() error { return file(strings.TrimPrefix(CAPath, "/"), 0o644, certs) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/nonroot", 0o700, uid) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("usr/local", 0o755, 0) },
		func() error { return dir("usr/local/bin", 0o755, 0) },
		func() error { return file(strings.TrimPrefix(Entrypoint, "/"), 0o755, bin) },
		func() error { return dir("usr/share", 0o755, 0) },
		zones,
		tw.Close,
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
