package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The floor of the streaming measurement: the same tokens, the same number of
// connections and the same pace, relayed by a process that only copies bytes
// from one TCP connection to another — no HTTP, no parsing, no storage. What it
// adds to a token's latency is what the machine's kernel and Go's runtime add
// to any server that reads and writes each token once, so no server, Relay
// included, can do better on that machine.

// floorChats measures chats streams through a byte-copying relay process of
// its own, as `bench chat -floor` prints it.
func floorChats(chats, tokens int, gap time.Duration) error {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer up.Close()
	go func() { // the upstream: each connection gets its tokens, each stamped with when it was written
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var b []byte
				for range tokens {
					time.Sleep(gap)
					b = append(b[:0], '<')
					b = strconv.AppendInt(b, time.Now().UnixNano(), 10)
					b = append(b, ">\n"...)
					if _, err := c.Write(b); err != nil {
						return
					}
				}
			}()
		}
	}()
	p, line, err := startChild("relay", "chat-floor-relay", "-upstream", up.Addr().String())
	if err != nil {
		return err
	}
	defer p.stop()
	stdin, out := p.stdin, p.out
	addr := string(bytes.TrimSpace(line))

	fmt.Fprintf(os.Stderr, "%d concurrent streams through a byte-copying TCP relay, %d tokens %s apart…\n", chats, tokens, gap)
	loadCPU := cpuTime()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		complete int
	)
	t0 := time.Now()
	for range chats {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, "floor:", err)
				return
			}
			defer c.Close()
			br := bufio.NewReader(c)
			got := 0
			for {
				if _, err := br.ReadSlice('\n'); err != nil {
					break
				}
				got++
			}
			if got == tokens {
				mu.Lock()
				complete++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(t0)
	loadCPU = cpuTime() - loadCPU
	if err := stdin.Close(); err != nil {
		return err
	}
	var rep relayReport
	if err := json.NewDecoder(out).Decode(&rep); err != nil {
		return fmt.Errorf("reading the relay process's report: %w", err)
	}
	if len(rep.Added) == 0 {
		return errors.New("no token went through the relay")
	}
	added := make([]time.Duration, len(rep.Added))
	for i, us := range rep.Added {
		added[i] = time.Duration(us) * time.Microsecond
	}
	fmt.Printf("%d concurrent streams through a byte-copying TCP relay (no HTTP, nothing stored): %d complete with all %d tokens in %s\n",
		chats, complete, tokens, took.Round(time.Millisecond))
	fmt.Printf("  added latency per token, upstream write to the relay's write (%d tokens): p50 %s  p99 %s  max %s\n",
		len(added), ms(pct(added, 50)), ms(pct(added, 99)), ms(added[len(added)-1]))
	fmt.Printf("  CPU: relay %s (%.1f µs per token), upstream and clients %s (%.1f µs per token)\n",
		rep.CPU.Round(time.Millisecond), µs(rep.CPU/time.Duration(len(added))), loadCPU.Round(time.Millisecond), µs(loadCPU/time.Duration(len(added))))
	return nil
}

// chatFloorRelay is the relay process of floorChats: for each client
// connection it connects to the upstream and writes on each read as it came,
// noting for each token the time from the upstream writing it to its own
// write. It prints its address, relays until its stdin closes, then prints a
// relayReport with Added and CPU.
func chatFloorRelay() error {
	upstream := flag.String("upstream", "", "the upstream's `address`")
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	var (
		mu    sync.Mutex
		added []int32
		conns sync.WaitGroup
	)
	cpu0 := cpuTime()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				u, err := net.Dial("tcp", *upstream)
				if err != nil {
					return
				}
				defer u.Close()
				var mine []int32
				buf := make([]byte, 4<<10)
				for {
					n, err := u.Read(buf)
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							break
						}
						now := time.Now().UnixNano()
						for b := buf[:n]; ; {
							i := bytes.IndexByte(b, '<')
							j := bytes.IndexByte(b, '>')
							if i < 0 || j < i {
								break
							}
							if sent, err := strconv.ParseInt(string(b[i+1:j]), 10, 64); err == nil {
								mine = append(mine, int32((now-sent)/1000))
							}
							b = b[j+1:]
						}
					}
					if err != nil {
						break
					}
				}
				mu.Lock()
				added = append(added, mine...)
				mu.Unlock()
			})
		}
	}()
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent is done
	cpu := cpuTime() - cpu0
	_ = ln.Close()
	conns.Wait()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(added)
	return json.NewEncoder(os.Stdout).Encode(relayReport{Added: added, CPU: cpu})
}
