// Package neardup finds pages that are the same page in other bytes: the
// same article with another date line, a counter, a rotating banner. A
// page's main text (Words: what is not the site's furniture) is
// fingerprinted by SimHash over shingles of words; two pages whose
// fingerprints are within a few bits are near duplicates.
package neardup
