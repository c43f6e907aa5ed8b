#!/usr/bin/env bash
# Installs Compose v2 (the 'docker compose' CLI plugin) where it is missing,
# built from source through the Go module proxy: a machine whose only
# Compose is Debian's docker-compose 1.29, and no registry to fetch a
# release binary from, still gets the Compose users type.
#
#   docker/compose-v2.sh     # then: docker compose version
#
# The plugin goes to ~/.docker/cli-plugins/docker-compose (DOCKER_CONFIG
# if set); the built binary is kept in ~/.cache/redcrawl, so a second run
# only copies it. The version is pinned (COMPOSE_VERSION, default v5.6.0:
# later ones need a newer Go than 1.26.8).
set -euo pipefail
version=${COMPOSE_VERSION:-v5.6.0}
plugins=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
cache=${XDG_CACHE_HOME:-$HOME/.cache}/redcrawl/compose-$version

say() { echo "compose-v2: $*" >&2; }

if docker compose version >/dev/null 2>&1; then
  say "$(docker compose version)"
  exit 0
fi
if [ ! -x "$cache/docker-compose" ]; then
  say "building Compose $version from the Go module proxy (a minute or two)"
  # Compose's go.mod has exclude directives, which 'go install pkg@version'
  # refuses: build it as the main module, from a copy of its source.
  src=$(go mod download -json "github.com/docker/compose/v5@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] || { say "go mod download github.com/docker/compose/v5@$version failed"; exit 1; }
  tmp=$(mktemp -d)
  trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
  cp -r "$src" "$tmp/compose"
  chmod -R u+w "$tmp/compose"
  mkdir -p "$cache"
  (cd "$tmp/compose" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/docker/compose/v5/internal.Version=$version" \
    -o "$cache/docker-compose.new" ./cmd)
  mv "$cache/docker-compose.new" "$cache/docker-compose"
fi
mkdir -p "$plugins"
cp "$cache/docker-compose" "$plugins/docker-compose"
say "$(docker compose version)"
