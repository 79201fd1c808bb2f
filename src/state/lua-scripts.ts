/**
 * Loads the Lua scripts of the Redis store from `lua/` next to this module. Each
 * file is named `<name>-<numberOfKeys>.lua` (as bullmq does), so the key count a
 * script expects is stated once, in its name; `<name>-n.lua` takes a key count
 * given at each call, for a batch touching as many keys as it holds (runScript
 * passes it, as ioredis expects, before the keys). The files are read relative to
 * `import.meta.url`: from `src/state/lua` under tsx and vitest, and from
 * `dist/state/lua` after a build, which is why the build copies them
 * (`node scripts/copy-lua-scripts.mjs`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface LuaScript {
  /** camelCase command name: `rate-limit-1.lua` -> `rateLimit`. */
  name: string;
  /** undefined for a `-n` script: each call gives its key count. */
  numberOfKeys: number | undefined;
  lua: string;
}

const FILE_PATTERN = /^([a-z0-9]+(?:-[a-z0-9]+)*)-(\d+|n)\.lua$/;

export const LUA_SCRIPT_DIR: URL = new URL('./lua/', import.meta.url);

let cached: ReadonlyMap<string, LuaScript> | undefined;

/** Every script of `dir`, by name. Throws when the directory is missing (a build without the copy step). */
export function loadLuaScripts(dir: URL = LUA_SCRIPT_DIR): ReadonlyMap<string, LuaScript> {
  if (dir === LUA_SCRIPT_DIR && cached) return cached;
  const path = fileURLToPath(dir);
  let files: string[];
  try {
    files = readdirSync(path);
  } catch (error) {
    throw new Error(`Redis Lua scripts not found in ${path}; the build must copy src/state/lua (scripts/copy-lua-scripts.mjs)`, {
      cause: error,
    });
  }
  const scripts = new Map<string, LuaScript>();
  for (const file of files.sort()) {
    const match = FILE_PATTERN.exec(file);
    if (!match?.[1] || !match[2]) continue;
    const name = match[1].replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    scripts.set(name, { name, numberOfKeys: match[2] === 'n' ? undefined : Number(match[2]), lua: readFileSync(new URL(file, dir), 'utf8') });
  }
  if (dir === LUA_SCRIPT_DIR) cached = scripts;
  return scripts;
}
