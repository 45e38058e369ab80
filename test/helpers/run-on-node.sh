#!/usr/bin/env bash
# Runs the test suite on another Node major than the one the project brings (npm scripts run on
# the `node` dependency, Node 24). Usage: test/helpers/run-on-node.sh VERSION [tap args...]
# The runtime is the `node` package from the npm registry, installed once under .cache/.
# dist/ must be built already (`npm run build`; TypeScript output does not depend on the runtime).
set -euo pipefail
cd "$(dirname "$0")/../.."
version="${1:?usage: test/helpers/run-on-node.sh VERSION [tap args...]}"
shift
dir=".cache/node-$version"
if [ ! -x "$dir/node_modules/.bin/node" ]; then
  mkdir -p "$dir"
  # The node package fetches its platform binary in an install script: allow just that one.
  printf '{"private":true,"allowScripts":{"node":true}}\n' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-save "node@$version" >/dev/null
fi
bin="$(cd "$dir/node_modules/.bin" && pwd)"
echo "== running the suite on node $("$bin/node" --version)"
# tap starts each test file with the Node that runs it, so the whole suite runs on this one.
# Test files run on that Node's own type stripping, as `npm test` does on Node 24.
TAP_TYPE_STRIP_ONLY=1 PATH="$bin:$PATH" exec "$bin/node" node_modules/.bin/tap "$@"
