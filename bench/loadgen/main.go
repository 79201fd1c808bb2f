// Command loadgen is the benchmarks' closed-loop HTTP/1.1 load generator. It is
// native so that it takes little of the CPU it measures: each connection sends
// its next request as soon as the previous answer is read, for a fixed time,
// and the latency of every request is kept. It speaks just enough HTTP/1.1 for
// uhlp's core and runners (keep-alive, Content-Length bodies) and reaches them
// over TCP or Unix sockets, which wrk cannot.
//
//	loadgen -target unix:/a.sock,unix:/b.sock -conns 16 -method POST -path /execute \
//	        -header 'content-type: application/json' -header 'x-request-id: {{id}}' -body-file body.json
//
// `{{id}}` in the path, a header or the body is replaced by a per-request id
// (`w<connection>-<sequence>`). Connection i goes to target i modulo the number
// of targets. It prints one JSON object: requests, errors, seconds, rps, p50Ms,
// p90Ms, p99Ms, maxMs.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

type result struct {
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	Seconds  float64 `json:"seconds"`
	RPS      int     `json:"rps"`
	P50Ms    float64 `json:"p50Ms"`
	P90Ms    float64 `json:"p90Ms"`
	P99Ms    float64 `json:"p99Ms"`
	MaxMs    float64 `json:"maxMs"`
}

type config struct {
	targets  []string
	method   string
	path     string
	headers  []string
	body     string
	host     string
	duration time.Duration
}

func main() {
	var headers headerList
	targets := flag.String("target", "", "comma-separated unix:<path> or tcp:<host:port>")
	conns := flag.Int("conns", 1, "connections, each one request at a time")
	method := flag.String("method", "GET", "request method")
	path := flag.String("path", "/", "request path; {{id}} is replaced")
	bodyFile := flag.String("body-file", "", "request body; {{id}} is replaced")
	duration := flag.Duration("duration", 5*time.Second, "measured time")
	warmup := flag.Duration("warmup", 1500*time.Millisecond, "unmeasured time before it")
	flag.Var(&headers, "header", "'name: value'; repeatable; {{id}} is replaced")
	flag.Parse()
	if *targets == "" || *conns < 1 {
		fail(errors.New("-target and -conns >= 1 are required"))
	}
	cfg := config{targets: strings.Split(*targets, ","), method: *method, path: *path, headers: headers, host: "uhlp-bench"}
	if *bodyFile != "" {
		body, err := os.ReadFile(*bodyFile)
		if err != nil {
			fail(err)
		}
		cfg.body = string(body)
	}
	if *warmup > 0 {
		cfg.duration = *warmup
		run(cfg, *conns)
	}
	cfg.duration = *duration
	// The phases on stderr, so a caller can read the CPU its target used over the measured time alone.
	fmt.Fprintln(os.Stderr, "loadgen: measuring")
	measured := run(cfg, *conns)
	fmt.Fprintln(os.Stderr, "loadgen: measured")
	out, err := json.Marshal(measured)
	if err != nil {
		fail(err)
	}
	fmt.Println(string(out))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(2)
}

func run(cfg config, conns int) result {
	latencies := make([][]time.Duration, conns)
	errorCounts := make([]int, conns)
	started := time.Now()
	deadline := started.Add(cfg.duration)
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			latencies[worker], errorCounts[worker] = connection(cfg, worker, deadline)
		}(i)
	}
	wg.Wait()
	seconds := time.Since(started).Seconds()
	var all []time.Duration
	errs := 0
	for i := range latencies {
		all = append(all, latencies[i]...)
		errs += errorCounts[i]
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	at := func(q float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(q * float64(len(all)))
		if i >= len(all) {
			i = len(all) - 1
		}
		return ms(all[i])
	}
	res := result{Requests: len(all), Errors: errs, Seconds: round(seconds), RPS: int(float64(len(all))/seconds + 0.5),
		P50Ms: at(0.5), P90Ms: at(0.9), P99Ms: at(0.99)}
	if len(all) > 0 {
		res.MaxMs = ms(all[len(all)-1])
	}
	return res
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }
func round(v float64) float64    { return float64(int64(v*1000+0.5)) / 1000 }

// connection runs one closed loop until the deadline; it reconnects after a failure.
func connection(cfg config, worker int, deadline time.Time) ([]time.Duration, int) {
	target := cfg.targets[worker%len(cfg.targets)]
	var latencies []time.Duration
	errs := 0
	var conn net.Conn
	var reader *bufio.Reader
	for sequence := 0; time.Now().Before(deadline); sequence++ {
		if conn == nil {
			c, err := dial(target)
			if err != nil {
				errs++
				time.Sleep(10 * time.Millisecond)
				continue
			}
			conn, reader = c, bufio.NewReaderSize(c, 64*1024)
		}
		request := render(cfg, "w"+strconv.Itoa(worker)+"-"+strconv.Itoa(sequence))
		t0 := time.Now()
		status, keepAlive, err := exchange(conn, reader, request)
		elapsed := time.Since(t0)
		if err != nil || status != 200 {
			errs++
		} else {
			latencies = append(latencies, elapsed)
		}
		if err != nil || !keepAlive {
			conn.Close()
			conn = nil
		}
	}
	if conn != nil {
		conn.Close()
	}
	return latencies, errs
}

func dial(target string) (net.Conn, error) {
	switch {
	case strings.HasPrefix(target, "unix:"):
		return net.Dial("unix", strings.TrimPrefix(target, "unix:"))
	case strings.HasPrefix(target, "tcp:"):
		return net.Dial("tcp", strings.TrimPrefix(target, "tcp:"))
	}
	return nil, fmt.Errorf("target %q is neither unix:<path> nor tcp:<host:port>", target)
}

func render(cfg config, id string) []byte {
	body := strings.ReplaceAll(cfg.body, "{{id}}", id)
	b := make([]byte, 0, 256+len(body))
	b = append(b, cfg.method...)
	b = append(b, ' ')
	b = append(b, strings.ReplaceAll(cfg.path, "{{id}}", id)...)
	b = append(b, " HTTP/1.1\r\nhost: "...)
	b = append(b, cfg.host...)
	b = append(b, "\r\n"...)
	for _, h := range cfg.headers {
		b = append(b, strings.ReplaceAll(h, "{{id}}", id)...)
		b = append(b, "\r\n"...)
	}
	if cfg.method != "GET" || body != "" {
		b = append(b, "content-length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	return append(b, body...)
}

// exchange writes one request and reads its answer; only Content-Length bodies are expected.
func exchange(conn net.Conn, reader *bufio.Reader, request []byte) (int, bool, error) {
	if _, err := conn.Write(request); err != nil {
		return 0, false, err
	}
	raw, err := reader.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	line := string(raw)
	fields := strings.SplitN(strings.TrimRight(line, "\r\n"), " ", 3)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "HTTP/1.") {
		return 0, false, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(fields[1])
	if err != nil {
		return 0, false, err
	}
	length := -1
	keepAlive := fields[0] == "HTTP/1.1"
	for {
		raw, err := reader.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		header := strings.TrimRight(string(raw), "\r\n")
		if header == "" {
			break
		}
		name, value, ok := strings.Cut(header, ":")
		if !ok {
			return 0, false, fmt.Errorf("bad header line %q", header)
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(name) {
		case "content-length":
			if length, err = strconv.Atoi(value); err != nil {
				return 0, false, err
			}
		case "connection":
			keepAlive = !strings.EqualFold(value, "close")
		case "transfer-encoding":
			return 0, false, errors.New("chunked answers are not supported")
		}
	}
	if length < 0 {
		return 0, false, errors.New("the answer has no Content-Length")
	}
	if _, err := reader.Discard(length); err != nil {
		return 0, false, err
	}
	return status, keepAlive, nil
}
