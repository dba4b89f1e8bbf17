#!/usr/bin/env bash
# Debian's Chromium for the real-browser tests (Playwright's own browser download cannot run here).
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "browser: installing Debian's chromium"
  (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; })
fi
command -v chromium >/dev/null 2>&1
