// Command resets opens connections to a chat server and resets them, as a
// load balancer's health checks or a port scan do: -n in all, -wave at a
// time (each wave opened, then every connection of it closed with a reset
// before the next), never sending a byte. For bench/server/resets.sh.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18000", "the server's chat address")
	n := flag.Int("n", 40000, "connections in all")
	wave := flag.Int("wave", 5000, "connections open at once")
	flag.Parse()
	if *n <= 0 || *wave <= 0 {
		fmt.Fprintln(os.Stderr, "resets: -n and -wave must be positive")
		os.Exit(2)
	}
	start := time.Now()
	done, failed := 0, 0
	conns := make([]*net.TCPConn, 0, *wave)
	for done+failed < *n {
		for len(conns) < *wave && done+failed+len(conns) < *n {
			nc, err := net.DialTimeout("tcp", *addr, 5*time.Second)
			if err != nil {
				failed++
				continue
			}
			conns = append(conns, nc.(*net.TCPConn))
		}
		for _, c := range conns {
			_ = c.SetLinger(0) // a reset, not a FIN
			_ = c.Close()
		}
		done += len(conns)
		conns = conns[:0]
	}
	fmt.Printf("resets: %d connections opened and reset (%d failed to connect) in %.1f s\n",
		done, failed, time.Since(start).Seconds())
	if failed > 0 {
		os.Exit(1)
	}
}
