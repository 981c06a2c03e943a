#!/usr/bin/env bash
# Renders SVG pictures (compare --plot's charts, a trace's timeline) to PNG
# with headless Chromium, to look at them where no browser is at hand:
#
#   scripts/svg_to_png.sh docs/pictures/*.svg     # writes NAME.png beside each
#
# Needs Debian's `chromium` package (apt-get install chromium). Runs it
# without a network, a sandbox or a profile of its own.
set -euo pipefail
command -v chromium >/dev/null || { echo "svg_to_png: chromium not found (apt-get install chromium)"; exit 1; }
[ $# -gt 0 ] || { echo "usage: svg_to_png.sh PICTURE.svg..."; exit 2; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
for svg in "$@"; do
    # The picture's own size, from its root element.
    size=$(grep -o '<svg[^>]*>' "$svg" | head -n 1)
    width=$(sed -n 's/.* width="\([0-9.]*\)".*/\1/p' <<<"$size")
    height=$(sed -n 's/.* height="\([0-9.]*\)".*/\1/p' <<<"$size")
    png="${svg%.svg}.png"
    chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --hide-scrollbars \
        --window-size="${width%.*},${height%.*}" --screenshot="$(realpath -m "$png")" \
        "file://$(realpath "$svg")" >/dev/null 2>&1
    echo "wrote $png (${width%.*} × ${height%.*})"
done
