/**
 * The secrets file, kept current: the file is checked every `intervalMs` (a
 * stat; it is read again only when its modification time, size or inode moved,
 * which also sees an editor's or a mounted Secret's rename-into-place), so a
 * changed value is used by the next request within that interval, with no
 * restart. A file that cannot be read or parsed mid-change keeps the values
 * before it, and the log says so without quoting the file.
 */
import { readFileSync, statSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { parse } from 'yaml';
import type { Logger } from '../logger.js';
import { isUhlpError } from '../shared/errors.js';
import { parseSecrets, type SecretFileContent } from './secret-file.js';
import type { ScrubbedValue, SecretStore } from './secret-store.js';

/** How often the secrets file is checked for a change: the bound within which a rotated value is in use. */
export const SECRET_FILE_INTERVAL_MS = 2_000;

export interface WatchedSecretFile extends SecretStore {
  /** Every value the file holds now, named: what the scrubber looks for. */
  values(): ScrubbedValue[];
  /** Reads the file again now if it changed; true when it did (tests, and the poll). */
  refresh(): boolean;
  /** Called after every change that was read. */
  onChange(listener: () => void): void;
  close(): void;
}

export interface WatchOptions {
  /** @defaultValue SECRET_FILE_INTERVAL_MS */
  readonly intervalMs?: number;
  readonly logger?: Logger;
}

/** The file's secrets, read now (a bad file fails the start) and re-read as it changes. */
export function watchSecretFile(file: string | undefined, options: WatchOptions = {}): WatchedSecretFile {
  const listeners: Array<() => void> = [];
  if (file === undefined) {
    const empty = parseSecrets(undefined, '');
    return { ...bind(() => empty), refresh: () => false, onChange: (listener) => void listeners.push(listener), close: () => {} };
  }
  let stamp = stampOf(statSync(file));
  let content = parseSecrets(parse(readFileSync(file, 'utf8')) as unknown, file);
  const refresh = (): boolean => {
    let stats: Stats;
    try {
      stats = statSync(file);
    } catch {
      return false;
    }
    const next = stampOf(stats);
    if (next === stamp) return false;
    try {
      // Parse errors are not logged as they come: the YAML parser's message quotes the line, which may be a value.
      content = parseSecrets(parse(readFileSync(file, 'utf8')) as unknown, file, content);
    } catch (error) {
      options.logger?.warn({ file, code: isUhlpError(error) ? error.code : 'UHLP_CONFIG_INVALID', reason: isUhlpError(error) ? error.message : 'not valid YAML' }, 'secrets file could not be read; the values before it stay in use');
      stamp = next;
      return false;
    }
    stamp = next;
    for (const listener of listeners) listener();
    return true;
  };
  const interval = options.intervalMs ?? SECRET_FILE_INTERVAL_MS;
  watchFile(file, { interval, persistent: false }, () => refresh());
  return {
    ...bind(() => content),
    refresh,
    onChange: (listener) => void listeners.push(listener),
    close: () => unwatchFile(file),
  };
}

function bind(current: () => SecretFileContent): SecretStore & { values(): ScrubbedValue[] } {
  return {
    ofApp: (appId, name, key) => current().ofApp(appId, name, key),
    appHas: (appId, name, key) => current().appHas(appId, name, key),
    ofCommunity: (name, key) => current().ofCommunity(name, key),
    values: () => current().values(),
  };
}

function stampOf(stats: Stats): string {
  return `${stats.ino}:${stats.size}:${stats.mtimeMs}`;
}
