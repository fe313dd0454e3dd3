#!/usr/bin/env bash
# Install Debian packages whose command is missing. Arguments: command=package pairs,
# e.g. redis-server=redis-server chromium=chromium. Uses sudo when not root.
set -euo pipefail
missing=()
for pair in "$@"; do
  cmd=${pair%%=*}; pkg=${pair#*=}
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
