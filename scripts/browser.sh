#!/usr/bin/env bash
# Debian's Chromium for the real-browser tests (Playwright's own browser download cannot run here), and the Korean
# and emoji fonts its screenshots need (without them Korean pages are drawn as boxes).
set -euo pipefail
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  missing=()
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  if command -v fc-list >/dev/null 2>&1; then
    fonts=$(fc-list 2>/dev/null || true)
    grep -qi nanum <<<"$fonts" || missing+=(fonts-nanum)
    grep -qi "color emoji" <<<"$fonts" || missing+=(fonts-noto-color-emoji)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "browser: installing ${missing[*]}"
    (apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; })
  fi
fi
command -v chromium >/dev/null 2>&1
