#!/bin/sh
# Regenerates the build system. Nothing else: configure does the checking.
set -e
cd "$(dirname "$0")"
exec autoreconf -fi
