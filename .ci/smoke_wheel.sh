#!/usr/bin/env bash
# Build the wheel, install it in a fresh venv (no source tree on the path) and serve one request.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="${TOKENBRIDGE_SHARED:-$(cd .. && pwd)/shared}"
WORK="$(mktemp -d)"
trap 'kill "${PID:-0}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
python3 -m pip wheel -q --no-deps -w "$WORK/dist" .
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q "$WORK"/dist/tokenbridge-*.whl
"$WORK/venv/bin/tokenbridge" --version
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$WORK" && exec "$WORK/venv/bin/tokenbridge" serve "$SHARED/models/qwen3" --host 127.0.0.1 --port "$PORT" \
  --served-model-name qwen3 --workers 1) &
PID=$!
python3 - "$PORT" <<'PY'
import json, sys, time, urllib.request
port = sys.argv[1]
for _ in range(300):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
        break
    except OSError:
        time.sleep(0.1)
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions/render",
                             json.dumps({"model": "qwen3", "messages": [{"role": "user", "content": "hi"}]}).encode(),
                             {"content-type": "application/json"})
ids = json.load(urllib.request.urlopen(req, timeout=30))["token_ids"]
assert ids[:3] == [151644, 872, 198], ids
print(f"wheel smoke: rendered {len(ids)} token ids")
PY
