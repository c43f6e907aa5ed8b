package parse

import (
	"bytes"
	"fmt"
	"net/url"
	"testing"
)

// BenchmarkExtract parses a documentation-like page: 30 KB with 107
// links (the size and link count of the scale issue's real site), and
// reports allocations a link.
func BenchmarkExtract(b *testing.B) {
	var page bytes.Buffer
	page.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>A page of the manual</title>` +
		`<link rel="stylesheet" href="/_static/style.css"><link rel="canonical" href="/docs/page.html"></head><body><div class="body">`)
	for i := 0; page.Len() < 30_000; i++ {
		if i < 107 {
			fmt.Fprintf(&page, `<p>Some text of the manual, <a class="reference internal" href="../section-%d/page-%d.html#anchor-%d" title="x">a link</a>.</p>`, i%7, i, i)
		} else {
			page.WriteString(`<p>More prose of the manual that has no link in it at all, as most of a page is.</p>`)
		}
	}
	page.WriteString(`</div></body></html>`)
	u, _ := url.Parse("http://docs.example.org/docs/part/page.html")
	data := page.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var links int
	for i := 0; i < b.N; i++ {
		p, err := Extract(u, bytes.NewReader(data), Limits{})
		if err != nil {
			b.Fatal(err)
		}
		links = len(p.Links)
	}
	b.ReportMetric(float64(links), "links")
}
