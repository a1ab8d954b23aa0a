#!/usr/bin/env node
// `prepublishOnly` of every publishable package: refuses `npm publish` while the package still
// carries the provisional repository address. The `@kit` scope and the repository are not settled
// yet (docs/decisions.md, "Packages and names"); publishing first would put names we may not keep
// into other people's lockfiles.
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const url = pkg.repository?.url ?? '';
if (!url || new URL(url.replace(/^git\+/, '')).hostname.endsWith('.invalid')) {
  console.error(
    `KIT_ERR_PUBLISH_UNSETTLED: ${pkg.name} has the placeholder repository "${url}". Settle the npm scope and the ` +
      'repository address first (docs/decisions.md, "Packages and names"), then set repository.url in every package.json.',
  );
  process.exit(1);
}
