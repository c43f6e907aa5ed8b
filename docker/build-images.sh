#!/usr/bin/env bash
# Builds RedCrawl's two images with no registry: nothing is pulled.
#
#   crawler image (CRAWLER_IMAGE, default redcrawl/crawler:local): the
#     crawler built here as a static binary (CGO_ENABLED=0), with the
#     machine's CA certificates, in an otherwise empty root file system.
#   Redis image (REDIS_IMAGE, default redcrawl/redis:local): this machine's
#     own redis-server and redis-cli (Debian's redis-server and redis-tools,
#     installed with apt-get when missing) with exactly the shared libraries
#     ldd lists for them and the dynamic loader.
#
# Each root file system is packed as a tar with fixed names, owners and
# times and handed to 'docker import'; the tar's digest is kept as a label,
# so an unchanged tree is not imported again, and the image it replaces is
# removed (only if it was one this script made and nothing else uses it).
# docker-compose.yml then runs unchanged with these names, for example:
#
#   docker/build-images.sh && REDIS_IMAGE=redcrawl/redis:local docker-compose up
#
# Where images can be pulled, 'docker compose up --build' builds the crawler
# from the Dockerfile and pulls redis:7 instead; this script is not needed.
set -euo pipefail
cd "$(dirname "$0")/.."

CRAWLER_IMAGE=${CRAWLER_IMAGE:-redcrawl/crawler:local}
REDIS_IMAGE=${REDIS_IMAGE:-redcrawl/redis:local}
label=org.redcrawl.rootfs-sha256

say() { echo "build-images: $*" >&2; }

command -v docker >/dev/null 2>&1 || { say "docker is not installed"; exit 1; }
if ! docker info >/dev/null 2>&1; then
  say "no Docker engine answers ('docker info' failed): start it (systemctl start docker) or check DOCKER_HOST"
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# import ROOTFS IMAGE CHANGE... : the tree as IMAGE, unless IMAGE already
# holds exactly this tree.
import() {
  local root=$1 image=$2; shift 2
  local tarball=$work/$(basename "$root").tar
  tar -C "$root" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$tarball" .
  local sum; sum=$(sha256sum "$tarball" | cut -d' ' -f1)
  local old; old=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
  if [ -n "$old" ] && [ "$(docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$image")" = "$sum" ]; then
    say "$image is up to date"
    return
  fi
  local args=(--change "LABEL $label=$sum")
  for c in "$@"; do args+=(--change "$c"); done
  docker import "${args[@]}" "$tarball" "$image" >/dev/null
  say "$image imported ($(du -h "$tarball" | cut -f1))"
  # The image this one replaced, if this script made it and it is now
  # untagged and unused.
  if [ -n "$old" ] && [ -n "$(docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$old" 2>/dev/null)" ] &&
     [ -z "$(docker image inspect -f '{{join .RepoTags ""}}' "$old")" ]; then
    docker image rm "$old" >/dev/null 2>&1 || true
  fi
}

# The crawler.
root=$work/crawler
mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/data"
chmod 1777 "$root/tmp"
CGO_ENABLED=0 go build -trimpath -ldflags=-buildid= -o "$root/crawler" ./cmd/crawler
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
import "$root" "$CRAWLER_IMAGE" 'ENTRYPOINT ["/crawler"]' 'WORKDIR /data' 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt'

# Redis, from this machine's packages.
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  say "installing redis-server and redis-tools (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq redis-server redis-tools >/dev/null
fi
root=$work/redis
mkdir -p "$root/usr/bin" "$root/data" "$root/tmp"
chmod 1777 "$root/tmp"
server=$(readlink -f "$(command -v redis-server)")
cli=$(readlink -f "$(command -v redis-cli)")
# Debian's redis-server is one binary under several names and acts by the
# name it is started as: keep the name.
cp "$server" "$root/usr/bin/redis-server"
cp "$cli" "$root/usr/bin/redis-cli"
for lib in $( (ldd "$server"; ldd "$cli") | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
import "$root" "$REDIS_IMAGE" 'CMD ["redis-server"]' 'WORKDIR /data' 'ENV PATH=/usr/bin' 'EXPOSE 6379'
