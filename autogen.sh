#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 The starfold authors
# Regenerates the build system. Nothing else: configure does the checking.
set -e
cd "$(dirname "$0")"
exec autoreconf -fi
