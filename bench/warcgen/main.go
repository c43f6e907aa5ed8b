// Command warcgen writes WARC files for the packaging benchmark
// (bench/wacz.sh): WORKERS folders of responses whose bodies are random
// (incompressible: the files weigh what their bodies do), MB megabytes in
// all, one in four an HTML page with a title, as the crawl's own writer
// (package archive) writes them.
//
//	go run ./warcgen -dir DIR -mb 300 -workers 3
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
)

func main() {
	dir := flag.String("dir", "", "where the workers' folders go")
	mb := flag.Int("mb", 300, "megabytes of bodies in all")
	workers := flag.Int("workers", 3, "folders, one a worker")
	flag.Parse()
	if *dir == "" {
		log.Fatal("warcgen: -dir is required")
	}
	const body = 64 << 10
	n := *mb << 20 / body
	r := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	var ws []*archive.Writer
	for w := range *workers {
		aw, err := archive.Open(archive.Config{Dir: filepath.Join(*dir, fmt.Sprint("w", w)), Worker: fmt.Sprint("w", w),
			MaxSize: 100 << 20, Software: "warcgen", Crawl: "bench"})
		if err != nil {
			log.Fatal(err)
		}
		ws = append(ws, aw)
	}
	buf := make([]byte, body)
	for i := range n {
		for j := range buf {
			buf[j] = byte(r.Uint32())
		}
		u := fmt.Sprintf("http://site%d.test/p/%d", i%50, i)
		ct, b := "application/octet-stream", string(buf)
		if i%4 == 0 {
			ct, b = "text/html", fmt.Sprintf("<html><head><title>page %d</title></head><body>%x</body></html>", i, buf[:body/2])
		}
		res := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", ct, len(b), b)
		raw := &fetch.Raw{Request: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), Response: []byte(res), RemoteIP: "127.0.0.1"}
		if _, _, err := ws[i%len(ws)].Write(archive.Exchange{URL: u, Started: at.Add(time.Duration(i) * time.Millisecond), Raw: raw}); err != nil {
			log.Fatal(err)
		}
	}
	for _, aw := range ws {
		if err := aw.Close(); err != nil {
			log.Fatal(err)
		}
	}
}
