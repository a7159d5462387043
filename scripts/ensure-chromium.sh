#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium for the browser tests (the HTML report and
# the annotation app, driven through playwright by scripts/browser/*.py; no browser is ever
# downloaded by playwright). Installs the `chromium` package when it is missing and this runs as
# root with apt-get; otherwise stops with what to install. Used by .ci/run and scripts/test.sh.
set -euo pipefail
[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "== installing chromium (browser tests)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
test -x /usr/bin/chromium || {
  echo "the browser tests need Chromium at /usr/bin/chromium: install Debian's chromium package (apt-get install chromium)" >&2
  exit 1
}
