#!/bin/sh
# Build the docker backend's images offline (no registry is contacted):
#   base       debootstrap --variant=minbase bookworm + openjdk-17-jre-headless + iproute2,
#              `docker import`ed (Debian mirror read from /etc/apt/sources.list(.d))
#   toxiproxy  base + the go-installed Toxiproxy v2.12.0 server
#   kafka      base + a build's libs dir at /opt/kafka/libs (one image per build)
# Tags are hashes of the inputs; an image is rebuilt only when an input changes.
# Starts a Docker engine (Debian docker.io, installed with apt if missing) when none runs.
# Usage: docker/build_images.sh [--kafka-version V]... [--kafka-dist DIR]...
set -eu
cd "$(dirname "$0")/.."
export TESTCONTAINERS_RYUK_DISABLED=true
exec python3 -m harness.cluster.images "$@"
