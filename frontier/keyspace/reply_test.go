package keyspace

import (
	"math"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// Every whole number a script may return reaches Go: written by cjson as it
// writes numbers (%.14g: exponent form from 1e14 on), or as miniredis's
// gopher-lua writes them (every digit, past 2^63 too), it decodes into an
// int64 field as the number within cjson's 14 digits, held within int64,
// from 0 to 1e20; a float field keeps a small number in exponent form as it
// is.
func TestAReplysNumbersSurviveCjsonsExponentForm(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.Int64Range(0, math.MaxInt64).Draw(t, "n")
		if rapid.Bool().Draw(t, "small") {
			n = rapid.Int64Range(0, 1e15).Draw(t, "small n")
		}
		written := strconv.FormatFloat(float64(n), 'g', 14, 64) // cjson's %.14g
		if rapid.Bool().Draw(t, "gopher-lua") {
			written = strconv.FormatFloat(math.Pow(10, rapid.Float64Range(0, 20).Draw(t, "log10 n")), 'f', 0, 64)
		}
		rate := rapid.Float64Range(1.0/86400, 1e6).Draw(t, "rate")
		raw := `{"wait":` + written + `,"until":[` + written + `,-1],"rates":{"h":` + strconv.FormatFloat(rate, 'g', 14, 64) + `}}`
		var r struct { // a reply's kinds of number (the exchange's: frontier.exchangeReply)
			Wait  int64              `json:"wait"`
			Until []int64            `json:"until"`
			Rates map[string]float64 `json:"rates"`
		}
		if err := DecodeReply([]byte(raw), &r); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		want, _ := strconv.ParseFloat(written, 64)
		want = math.Min(want, math.Nextafter(math.MaxInt64, 0))
		if d := math.Abs(float64(r.Wait) - want); d > want*1e-13+1 || len(r.Until) != 2 || r.Until[0] != r.Wait || r.Until[1] != -1 {
			t.Fatalf("%s: wait %d, until %v; want %s", raw, r.Wait, r.Until, written)
		}
		if got := r.Rates["h"]; math.Abs(got-rate) > rate*1e-13 {
			t.Fatalf("%s: rate %v; want %v", raw, got, rate)
		}
	})
}
