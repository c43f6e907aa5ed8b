// Package settings holds what every worker of a crawl must agree on: the
// Settings, declared once in Table (each setting's field in the crawl's
// config hash, seed's flag and help, whether 'crawler set' may change it
// live), written to Redis by seed (Store) and read by every worker and
// reader (Load). Store and Load, the conflict message, status --json and
// seed's flags are all derived from the table. Rules compile the URL
// filters and trap limits the settings give.
package settings
