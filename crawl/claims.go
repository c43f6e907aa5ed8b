package crawl

import (
	"context"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/payloads"
)

// claims sends the fetch loops' payload digest claims (the crawl's digest
// index, payloads.Index.ClaimAll) in batches, as a group commit: one call
// for every claim made while the last call was in flight, so that at many
// pages a second the index costs a fraction of a call a page, and a loop
// never waits for more than the call in flight and its own.
type claims struct {
	fr   *frontier.Frontier
	from []string // seed --dedup-from: the earlier crawls whose committed payloads are looked up first
	reqs chan claimReq
}

type claimReq struct {
	c     payloads.Claim
	reply chan claimReply
}

type claimReply struct {
	earlier payloads.Archived
	found   bool
	err     error
}

// maxClaimBatch bounds a call's claims.
const maxClaimBatch = 256

func newClaims(fr *frontier.Frontier, from []string) *claims {
	return &claims{fr: fr, from: from, reqs: make(chan claimReq, maxClaimBatch)}
}

// run sends the claims until ctx ends.
func (cl *claims) run(ctx context.Context) {
	batch := make([]claimReq, 0, maxClaimBatch)
	list := make([]payloads.Claim, 0, maxClaimBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-cl.reqs:
			batch, list = append(batch[:0], r), append(list[:0], r.c)
		}
	more:
		for len(batch) < maxClaimBatch {
			select {
			case r := <-cl.reqs:
				batch, list = append(batch, r), append(list, r.c)
			default:
				break more
			}
		}
		got, found, err := cl.fr.Digests.ClaimAllFrom(ctx, cl.from, list)
		for i, r := range batch {
			if err != nil {
				r.reply <- claimReply{err: err}
			} else {
				r.reply <- claimReply{earlier: got[i], found: found[i]}
			}
		}
	}
}

// claim claims c, waiting for the batch it goes in.
func (cl *claims) claim(ctx context.Context, c payloads.Claim) (payloads.Archived, bool, error) {
	r := claimReq{c: c, reply: make(chan claimReply, 1)}
	select {
	case cl.reqs <- r:
	case <-ctx.Done():
		return payloads.Archived{}, false, ctx.Err()
	}
	select {
	case rep := <-r.reply:
		return rep.earlier, rep.found, rep.err
	case <-ctx.Done():
		return payloads.Archived{}, false, ctx.Err()
	}
}
