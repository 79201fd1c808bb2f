/**
 * Retention limits of the ledgers: per plane (deployment mode) from the core's
 * configuration (`UHLP_LEDGER_RETENTION`), per app from its AppDefinition
 * (`spec.ledger.retention`), each a maximum age and a maximum size. An app's
 * limits apply to its own sessions on top of its plane's: whichever is
 * stricter removes a segment. ledger-prune.ts applies them.
 *
 * Durations are `<n>s|m|h|d` (`90m`, `7d`); sizes are bytes, or `<n>` with a
 * binary (`Ki`, `Mi`, `Gi`, `Ti`) or decimal (`K`, `M`, `G`, `T`) suffix, as
 * Kubernetes quantities are written.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { UhlpError } from '../shared/errors.js';
import { replaceFile } from './durable-files.js';
import { RETENTION_FILE } from './ledger-paths.js';

export interface RetentionLimits {
  /** Segments whose last write is older than this are removed, ms. @defaultValue none */
  readonly maxAgeMs?: number;
  /** The oldest segments are removed while the ledgers are larger than this, bytes. @defaultValue none */
  readonly maxBytes?: number;
}

export interface RetentionPolicy {
  /** Per plane; `*` holds the limits of planes not named. */
  readonly planes: Readonly<Record<string, RetentionLimits>>;
  /** Per app (its sessions, in its plane). */
  readonly apps: Readonly<Record<string, RetentionLimits>>;
}

export const DURATION_PATTERN = '^[0-9]{1,9}(s|m|h|d)$';
export const SIZE_PATTERN = '^[0-9]{1,15}(Ki|Mi|Gi|Ti|K|M|G|T)?$';

const DURATION_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3600_000, d: 86_400_000 };
const SIZE_UNITS: Record<string, number> = { '': 1, K: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 };

/** `7d` -> ms; `setting` names the value in the error. */
export function parseDuration(text: string, setting: string): number {
  const match = new RegExp(DURATION_PATTERN).exec(text);
  const value = match ? Number(text.slice(0, -1)) * DURATION_UNITS[match[1]!]! : 0;
  if (!match || value < 1000) throw new UhlpError('UHLP_CONFIG_INVALID', `${setting} must be a duration such as 90m, 12h or 7d (at least 1s), got "${text}"`, { name: setting, value: text });
  return value;
}

/** `10Gi` -> bytes; `setting` names the value in the error. */
export function parseSize(text: string, setting: string): number {
  const match = new RegExp(SIZE_PATTERN).exec(text);
  const suffix = match?.[1] ?? '';
  const value = match ? Number(text.slice(0, text.length - suffix.length)) * SIZE_UNITS[suffix]! : 0;
  if (!match || !(value >= 1) || !Number.isSafeInteger(Math.round(value))) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `${setting} must be a size such as 500Mi, 10Gi or 1T (bytes, at least 1), got "${text}"`, { name: setting, value: text });
  }
  return Math.round(value);
}

/**
 * `production=30d/100Gi,development=1d/2Gi,*=7d`: per plane, `maxAge/maxSize`
 * (either may be left out or `-`), `*` for planes not named. Empty: none.
 */
export function parseRetentionSpec(text: string, setting: string): Record<string, RetentionLimits> {
  const planes: Record<string, RetentionLimits> = {};
  for (const raw of text.split(',')) {
    const part = raw.trim();
    if (part === '') continue;
    const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?|\*)=([^/]*)(?:\/(.*))?$/.exec(part);
    if (!match) throw new UhlpError('UHLP_CONFIG_INVALID', `${setting} must be plane=maxAge/maxSize pairs, e.g. production=30d/100Gi,*=7d, got "${part}"`, { name: setting, value: part });
    const [, plane, , age = '', size = ''] = match;
    if (planes[plane!] !== undefined) throw new UhlpError('UHLP_CONFIG_INVALID', `${setting} names plane "${plane}" twice`, { name: setting, value: part });
    planes[plane!] = {
      ...(age !== '' && age !== '-' ? { maxAgeMs: parseDuration(age, `${setting} (${plane})`) } : {}),
      ...(size !== '' && size !== '-' ? { maxBytes: parseSize(size, `${setting} (${plane})`) } : {}),
    };
  }
  return planes;
}

/** The limits of a plane: its own, else those of `*`. */
export function planeLimits(policy: RetentionPolicy, tier: string): RetentionLimits {
  return policy.planes[tier] ?? policy.planes['*'] ?? {};
}

/** `7d/10Gi`, `7d`, `-/10Gi` or `none`, for logs and reasons. */
export function formatLimits(limits: RetentionLimits): string {
  const age = limits.maxAgeMs === undefined ? undefined : formatDuration(limits.maxAgeMs);
  const size = limits.maxBytes === undefined ? undefined : formatSize(limits.maxBytes);
  if (age === undefined && size === undefined) return 'none';
  return size === undefined ? age! : `${age ?? '-'}/${size}`;
}

export function formatDuration(ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3600_000], ['m', 60_000]] as const) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${Math.round(ms / 1000)}s`;
}

export function formatSize(bytes: number): string {
  for (const [unit, size] of [['Ti', 1024 ** 4], ['Gi', 1024 ** 3], ['Mi', 1024 ** 2], ['Ki', 1024]] as const) if (bytes % size === 0) return `${bytes / size}${unit}`;
  return `${bytes}`;
}

/** What the core applies, kept in the data directory for `uhlp ledger prune` by hand. */
export interface RetentionFile {
  policy: RetentionPolicy;
  sessionTtlMs: number;
  written_at: string;
}

export function writeRetentionFile(dataDir: string, policy: RetentionPolicy, sessionTtlMs: number): void {
  const file = path.join(dataDir, RETENTION_FILE);
  const text = `${JSON.stringify({ policy, sessionTtlMs, written_at: new Date().toISOString() } satisfies RetentionFile)}\n`;
  const known = readRetentionFile(dataDir);
  // Rewritten only when it changes: the core asks on every scheduled prune.
  if (known && JSON.stringify(known.policy) === JSON.stringify(policy) && known.sessionTtlMs === sessionTtlMs) return;
  replaceFile(file, text);
}

/** The retention the core last applied to this data directory, if any. */
export function readRetentionFile(dataDir: string): RetentionFile | undefined {
  try {
    const value = JSON.parse(readFileSync(path.join(dataDir, RETENTION_FILE), 'utf8')) as Partial<RetentionFile>;
    if (typeof value.policy !== 'object' || value.policy === null || typeof value.sessionTtlMs !== 'number') return undefined;
    return value as RetentionFile;
  } catch {
    return undefined;
  }
}
