package broker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Server is a broker program that `load --serve NAME` starts on a free
// loopback port for each run, and that the tests start.
type Server struct {
	// Name is the program's name, as --serve takes it.
	Name string
	// Protocol is the protocol it speaks (NATS, Redis, MQTT).
	Protocol string
	// Package is the Debian package that installs it.
	Package string
	// Command is its command line for /bin/sh, {port} standing for the
	// port and {conf} for a file of Conf: loopback only, nothing written
	// to disk.
	Command string
	// Conf is the configuration file the command reads ({port} in it
	// replaced), "" for none.
	Conf string
	// version is the argument that prints its version, and the pattern
	// that finds the version in what it prints.
	version   []string
	versionRE *regexp.Regexp
}

// Servers are the brokers --serve knows.
var Servers = []Server{
	{Name: "nats-server", Protocol: NATS, Package: "nats-server",
		Command: "nats-server -a 127.0.0.1 -p {port}",
		version: []string{"--version"}, versionRE: regexp.MustCompile(`v?(\d+\.\d+\.\d+\S*)`)},
	{Name: "redis-server", Protocol: Redis, Package: "redis-server",
		Command: "redis-server --bind 127.0.0.1 --port {port} --save '' --appendonly no",
		version: []string{"--version"}, versionRE: regexp.MustCompile(`v=(\d+\.\d+\.\d+\S*)`)},
	// mosquitto leaves Nagle's algorithm on by default, which makes a
	// turn-taking room wait for delayed ACKs; nats-server and redis-server
	// set TCP_NODELAY, as volanogo does for the original VOLANO server.
	{Name: "mosquitto", Protocol: MQTT, Package: "mosquitto",
		Command: "mosquitto -c {conf}",
		Conf:    "listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n",
		version: []string{"-h"}, versionRE: regexp.MustCompile(`version (\d+\.\d+\.\d+\S*)`)},
}

// LookupServer returns the broker program of that name.
func LookupServer(name string) (Server, bool) {
	for _, s := range Servers {
		if s.Name == name {
			return s, true
		}
	}
	return Server{}, false
}

// ServerNames lists the names --serve takes besides volanogo's own.
func ServerNames() []string {
	names := make([]string, len(Servers))
	for i, s := range Servers {
		names[i] = s.Name
	}
	return names
}

// WriteConf writes the program's configuration for port into dir and
// returns the file's name ("" when it has none).
func (s Server) WriteConf(dir string, port int) (string, error) {
	if s.Conf == "" {
		return "", nil
	}
	f := filepath.Join(dir, s.Name+".conf")
	return f, os.WriteFile(f, []byte(strings.ReplaceAll(s.Conf, "{port}", strconv.Itoa(port))), 0o600)
}

// Path is where the program is: on the PATH, or in an sbin directory.
func (s Server) Path() (string, error) {
	if p, err := exec.LookPath(s.Name); err == nil {
		return p, nil
	}
	// Debian installs nats-server and mosquitto in /usr/sbin, which a
	// user's PATH may not have.
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin"} {
		if p, err := exec.LookPath(filepath.Join(dir, s.Name)); err == nil {
			return p, nil
		}
	}
	return "", &MissingError{Server: s}
}

// MissingError is a broker program that is not installed.
type MissingError struct{ Server Server }

func (e *MissingError) Error() string {
	return e.Server.Name + " is not installed (the Debian package " + e.Server.Package + ")"
}

// Version runs the program to ask its version ("2.9.10").
func (s Server) Version(ctx context.Context) (string, error) {
	p, err := s.Path()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// mosquitto -h prints its usage and exits 3: what it printed counts.
	out, err := exec.CommandContext(ctx, p, s.version...).CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n")
	if m := s.versionRE.FindStringSubmatch(first); m != nil {
		return m[1], nil
	}
	if err == nil {
		err = errors.New("no version in " + strings.TrimSpace(first))
	}
	return "", err
}
