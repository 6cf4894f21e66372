// Writes dist/THIRD_PARTY.txt: every package in node_modules that the bundle may include
// (the dependencies and theirs, not the build tool), with its version and license.
import { readFileSync, writeFileSync, existsSync } from 'node:fs';

const root = JSON.parse(readFileSync('package.json', 'utf8'));
const seen = new Map();
const visit = (name) => {
  if (seen.has(name)) return;
  const p = `node_modules/${name}/package.json`;
  if (!existsSync(p)) return;
  const pkg = JSON.parse(readFileSync(p, 'utf8'));
  seen.set(name, `${name} ${pkg.version} — ${pkg.license ?? 'see package'}`);
  Object.keys(pkg.dependencies ?? {}).forEach(visit);
};
Object.keys(root.dependencies).forEach(visit);
const lines = [...seen.values()].sort();
writeFileSync('dist/THIRD_PARTY.txt', `Packages bundled into app.js and app.css:\n\n${lines.join('\n')}\n`);
