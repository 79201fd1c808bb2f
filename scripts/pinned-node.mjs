#!/usr/bin/env node
// The pinned Node (scripts/node-pin.json), taken from the npm registry once and kept under
// ~/.cache/uhlp/node: its binary runs the project where the machine's Node is older, its
// headers let node-gyp build native addons with no download, and every image copies it.
//
// Plain JavaScript on purpose: it must run on whatever Node the machine has (18 or newer)
// before the project can be installed. Prints the directory holding bin/node and include/.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const PIN_FILE = join(dirname(fileURLToPath(import.meta.url)), 'node-pin.json');

/** The pin: version, and the package and digest for this machine's platform. */
export function readNodePin() {
  const pin = JSON.parse(readFileSync(PIN_FILE, 'utf8'));
  const platform = `${process.platform}-${process.arch}`;
  const pkg = pin.packages[platform];
  if (!pkg) throw new Error(`no pinned Node package for ${platform} in ${PIN_FILE}`);
  return { version: pin.version, name: pkg.name, integrity: pkg.integrity };
}

function cacheRoot() {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'uhlp', 'node');
}

/**
 * The directory of the pinned Node, fetched and checked when it is not cached yet.
 * A marker holding the digest is written last, so a fetch cut short is fetched again.
 */
export function ensurePinnedNode() {
  const pin = readNodePin();
  const dir = join(cacheRoot(), `${pin.name}-${pin.version}`);
  const marker = join(dir, '.uhlp-integrity');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === pin.integrity) return dir;

  mkdirSync(cacheRoot(), { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'uhlp-node-'));
  try {
    const out = execFileSync('npm', ['pack', `${pin.name}@${pin.version}`, '--pack-destination', work, '--json', '--loglevel=error'], { encoding: 'utf8' });
    const [{ filename }] = JSON.parse(out);
    const tarball = join(work, filename);
    // npm checks the registry's own digest; this checks the one the repository pins.
    const actual = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    if (actual !== pin.integrity) throw new Error(`${pin.name}@${pin.version}: digest ${actual} is not the pinned ${pin.integrity}`);
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    execFileSync('tar', ['-xzf', tarball, '-C', unpacked, '--strip-components=1']);
    if (!existsSync(join(unpacked, 'bin', 'node'))) throw new Error(`${pin.name}@${pin.version} has no bin/node`);
    writeFileSync(join(unpacked, '.uhlp-integrity'), pin.integrity);
    rmSync(dir, { recursive: true, force: true });
    renameSync(unpacked, dir);
    return dir;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    process.stdout.write(`${ensurePinnedNode()}\n`);
  } catch (error) {
    process.stderr.write(`pinned-node: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
