#!/usr/bin/env bash
# Debian's chromium and its chromedriver, for the console's browser tests
# (tests/service/test_console_browser.py): installed once, when either is missing.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
    sudo=(sudo)
fi
echo "installing chromium and chromium-driver (Debian packages) for the console's tests"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    chromium chromium-driver
