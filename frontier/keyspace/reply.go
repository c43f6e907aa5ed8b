package keyspace

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// A script's reply is JSON made by Redis's cjson, which writes a number of
// 1e14 or more in exponent form with 14 significant digits ("5e+17"),
// and Go's encoding/json refuses that for an integer field. The settings
// keep every time and count a script returns below 1e14 (crawl/settings.MinRate,
// MaxBurst); DecodeReply reads one that is not all the same, rather than
// failing the exchange and every host with it.

// DecodeReply unmarshals a script's JSON reply into v; a number of 1e14 or
// more in exponent form is read as the whole number nearest it, within
// int64.
func DecodeReply(raw []byte, v any) error {
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var tree any
	if d.Decode(&tree) != nil {
		return err
	}
	whole, merr := json.Marshal(integral(tree))
	if merr != nil {
		return err
	}
	return json.Unmarshal(whole, v)
}

// integral rewrites the numbers of a decoded tree of 1e14 or more that Go
// cannot read as an int64 (written with an exponent, or past 2^63 as
// gopher-lua writes them) as whole numbers, rounded and held within int64;
// smaller ones (a rate of 1.2e-05 for a float field), and strings, stay as
// they are.
func integral(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = integral(x)
		}
	case []any:
		for i, x := range v {
			v[i] = integral(x)
		}
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return v
		}
		f, err := v.Float64()
		if err != nil || math.IsNaN(f) || math.Abs(f) < 1e14 {
			return v
		}
		limit := math.Nextafter(math.MaxInt64, 0) // the largest float64 below 2^63
		f = math.Round(math.Max(math.Min(f, limit), -limit))
		return json.Number(strconv.FormatInt(int64(f), 10))
	}
	return v
}
