#!/usr/bin/env bash
# Install the Debian packages dlperf needs beyond Python: a CJK font for the Chinese report's
# plots, chromium and its driver for the report's headless-browser test
# (tests/test_report_browser.py) and, with --slurm, Slurm and munge for the real test cluster. Needs root and apt;
# without them it says what to install and goes on (the report falls back to boxes, the
# Slurm tests skip outside CI).
set -euo pipefail
packages=(fonts-noto-cjk chromium chromium-driver)
[[ "${1:-}" == "--slurm" ]] && packages+=(slurm-wlm munge)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
  echo "dlperf: please install as root: apt-get install ${missing[*]}" >&2
  exit 0
fi
echo "dlperf: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
