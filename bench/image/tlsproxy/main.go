// Command tlsproxy terminates TLS in front of a plain TCP address, with a
// certificate for -name signed by a CA it makes at start (written to -ca as
// PEM): bench/image.sh runs it in the server container's network namespace
// so that a load container can dial wss:// and verify the certificate
// (with that CA) or fail to (without it). It exits after -duration.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", ":8443", "TLS address to listen on")
	to := flag.String("to", "127.0.0.1:8080", "plain TCP address to forward to")
	name := flag.String("name", "localhost", "the certificate's DNS name")
	caOut := flag.String("ca", "ca.pem", "where to write the CA certificate (PEM)")
	duration := flag.Duration("duration", 5*time.Minute, "exit after this long")
	flag.Parse()
	if err := run(*listen, *to, *name, *caOut, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "tlsproxy:", err)
		os.Exit(1)
	}
}

func run(listen, to, name, caOut string, duration time.Duration) error {
	cert, caPEM, err := certificate(name)
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", listen, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	// The CA is written once the listener is up: its file is the ready sign.
	if err := os.WriteFile(caOut, caPEM, 0o644); err != nil {
		return err
	}
	fmt.Printf("tlsproxy: %s -> %s, certificate for %s\n", ln.Addr(), to, name)
	time.AfterFunc(duration, func() { _ = ln.Close() })
	for {
		c, err := ln.Accept()
		if err != nil {
			return nil // closed at the deadline
		}
		go forward(c, to)
	}
}

// forward copies between the TLS connection and a new one to the target
// until either side closes.
func forward(c net.Conn, to string) {
	defer c.Close()
	t, err := net.DialTimeout("tcp", to, 10*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlsproxy:", err)
		return
	}
	defer t.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(t, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, t); done <- struct{}{} }()
	<-done
}

// certificate makes a CA and a leaf certificate for name signed by it.
func certificate(name string) (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "volanogo test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}
