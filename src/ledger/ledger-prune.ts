/**
 * Retention: removes whole old segments of the session ledgers, per plane and
 * per app (ledger-retention.ts), oldest first, and never silently.
 *
 * - A segment goes when its last write is older than the maximum age, or while
 *   its app's (or plane's) ledgers are over their maximum size. Segments of a
 *   session go in order, so what remains is always the end of its chain.
 * - When segments 1..k of a session go, its `anchor.json` (ledger-anchor.ts)
 *   says so, with the last hash and the entry counts of what went: the rest
 *   still verifies, and verification reports the gap. The anchor is written
 *   before anything is removed.
 * - A session's last segment goes only once the session is over: an ambient
 *   session an hour after it began, a stored one once it has been idle for the
 *   session TTL, and never one the ledger thread has open. A session removed
 *   whole is listed in its plane's `pruned-sessions.jsonl` (pruned-sessions.ts)
 *   before its directory goes.
 * - Keyed ledgers are anchored with the key: pruning one needs it.
 *
 * The core runs this on its ledger thread on a schedule, yielding between
 * sessions so that turns keep being written; `uhlp ledger prune` runs it by
 * hand. A lock file keeps two prunes of one data directory apart.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { opendir } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as yieldToEvents } from 'node:timers/promises';
import { UhlpError } from '../shared/errors.js';
import { replaceFile } from './durable-files.js';
import { readAnchor, sealAnchor, writeAnchor, type AnchoredLedger, type LedgerAnchor } from './ledger-anchor.js';
import { parseJsonLine } from './ledger-chain.js';
import { checkpointSegment, readCheckpointsSync, type LedgerCheckpoint } from './ledger-checkpoints.js';
import type { LedgerKind } from './ledger-entry.js';
import { segmentPath } from './ledger-join.js';
import type { LedgerKey } from './ledger-key.js';
import { CHECKPOINT_FILE, isTierName, LEDGER_KINDS, PRUNED_SESSIONS_FILE, segmentsIn } from './ledger-paths.js';
import { formatLimits, planeLimits, type RetentionLimits, type RetentionPolicy } from './ledger-retention.js';
import { readSessionMeta, type SessionMeta } from './ledger-session-meta.js';
import { countLines, readLastLine } from './line-reader.js';
import { appendPrunedSessions, type PrunedSession } from './pruned-sessions.js';

/** An ambient session takes turns for an hour; this much later it is surely over. */
const AMBIENT_SESSION_END_MS = 3600_000 + 5 * 60_000;
/** Sessions looked at between two yields to the thread's other work. */
const SESSIONS_PER_YIELD = 64;
const LOCK_FILE = 'ledger-prune.lock';

/** What the ledger writer (the core's ledger thread) tells and is told by a prune. */
export interface PruneWriterHooks {
  /** The writer has the session open: its last segment stays. */
  isOpen(tier: string, sessionId: string): boolean;
  /** The session is about to be removed whole: close it, and write nothing to it until endPrune. */
  beginPrune(tier: string, sessionId: string): void;
  endPrune(tier: string, sessionId: string): void;
}

export interface PruneOptions {
  dataDir: string;
  policy: RetentionPolicy;
  /** @defaultValue `() => new Date()` */
  now?: () => Date;
  /** Seals anchors and the record of removed sessions; a keyed ledger is not pruned without it. @defaultValue none */
  key?: LedgerKey;
  /** A stored session is over once it has had no turn for this long (the core's session TTL), ms. */
  sessionTtlMs: number;
  /** Decide and report, remove nothing. @defaultValue false */
  dryRun?: boolean;
  /** @defaultValue none (a prune by hand, with no core writing) */
  writer?: PruneWriterHooks;
}

export interface PrunedRecord {
  tier: string;
  sessionId: string;
  /** Segments 1 to this one are gone (both ledgers). */
  throughSegment: number;
  /** The whole session went. */
  whole: boolean;
  bytes: number;
  reason: string;
}

export interface PruneReport {
  removedSegments: number;
  removedSessions: number;
  freedBytes: number;
  /** Ledger bytes left, per plane. */
  keptBytes: Record<string, number>;
  /** What was (or, dry, would be) removed, per session; at most 1000 listed. */
  pruned: PrunedRecord[];
  /** Sessions that could not be pruned, and why. */
  errors: Array<{ where: string; message: string }>;
}

const MAX_LISTED = 1000;

/** One pair of segment files (exec and evidence n), as retention sees it. */
interface Unit {
  segment: number;
  bytes: number;
  /** The latest modification of the two files, epoch ms. */
  lastWrite: number;
}

interface SessionPlan {
  tier: string;
  sessionId: string;
  dir: string;
  meta: SessionMeta;
  anchor?: LedgerAnchor;
  /** Segments after the anchor, in order. */
  units: Unit[];
  /** Leading units that may go (all but the last, and the last too once the session is over). */
  eligible: number;
  /** Leading units chosen to go. */
  remove: number;
  reason?: string;
  /** Files the anchor says were removed and are still here (a prune cut short). */
  leftovers: string[];
}

export async function pruneLedgers(options: PruneOptions): Promise<PruneReport> {
  const report: PruneReport = { removedSegments: 0, removedSessions: 0, freedBytes: 0, keptBytes: {}, pruned: [], errors: [] };
  const planes = path.join(options.dataDir, 'planes');
  let tiers: string[];
  try {
    tiers = readdirSync(planes).filter(isTierName).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return report;
    throw error;
  }
  const release = options.dryRun ? () => undefined : lock(options.dataDir);
  try {
    for (const tier of tiers) await prunePlane(tier, path.join(planes, tier), options, report);
    return report;
  } finally {
    release();
  }
}

async function prunePlane(tier: string, planeDir: string, options: PruneOptions, report: PruneReport): Promise<void> {
  const now = (options.now ?? (() => new Date()))().getTime();
  const plane = planeLimits(options.policy, tier);
  const sessions = await scanSessions(tier, path.join(planeDir, 'sessions'), options, now, report);
  const limitsOf = (session: SessionPlan): Array<{ limits: RetentionLimits; who: string }> => {
    const app = session.meta.appId === undefined ? undefined : options.policy.apps[session.meta.appId];
    return [{ limits: plane, who: `plane ${tier}` }, ...(app ? [{ limits: app, who: `app ${session.meta.appId}` }] : [])];
  };

  // Age: per session, its leading segments last written before the cutoff.
  for (const session of sessions) {
    for (const { limits, who } of limitsOf(session)) {
      if (limits.maxAgeMs === undefined) continue;
      let remove = 0;
      while (remove < session.eligible && session.units[remove]!.lastWrite < now - limits.maxAgeMs) remove += 1;
      if (remove > session.remove) {
        session.remove = remove;
        session.reason = `max age ${formatLimits({ maxAgeMs: limits.maxAgeMs })} (${who})`;
      }
    }
  }
  // Size: per app, then for the plane, the oldest segments first until under the limit.
  const byApp = new Map<string, SessionPlan[]>();
  for (const session of sessions) {
    const appId = session.meta.appId;
    if (appId === undefined || options.policy.apps[appId]?.maxBytes === undefined) continue;
    byApp.set(appId, [...(byApp.get(appId) ?? []), session]);
  }
  for (const [appId, own] of byApp) shrink(own, options.policy.apps[appId]!.maxBytes!, `max size ${formatLimits({ maxBytes: options.policy.apps[appId]!.maxBytes! })} (app ${appId})`);
  if (plane.maxBytes !== undefined) shrink(sessions, plane.maxBytes, `max size ${formatLimits({ maxBytes: plane.maxBytes })} (plane ${tier})`);

  const removedWhole: PrunedSession[] = [];
  let kept = 0;
  let seen = 0;
  for (const session of sessions) {
    if (++seen % SESSIONS_PER_YIELD === 0) await yieldToEvents();
    const freed = session.units.slice(0, session.remove).reduce((sum, unit) => sum + unit.bytes, 0);
    kept += session.units.reduce((sum, unit) => sum + unit.bytes, 0) - freed;
    if (!options.dryRun) removeLeftovers(session, report);
    if (session.remove === 0) continue;
    const whole = session.remove === session.units.length;
    const record: PrunedRecord = {
      tier,
      sessionId: session.sessionId,
      throughSegment: session.units[session.remove - 1]!.segment,
      whole,
      bytes: freed,
      reason: session.reason ?? 'retention',
    };
    if (!options.dryRun) {
      try {
        if (whole) removedWhole.push(removeSession(session, options, record.reason));
        else anchorAndRemove(session, options, record.reason, now);
      } catch (error) {
        report.errors.push({ where: session.dir, message: error instanceof Error ? error.message : String(error) });
        continue;
      }
    }
    report.removedSegments += session.remove;
    report.freedBytes += freed;
    if (whole) report.removedSessions += 1;
    if (report.pruned.length < MAX_LISTED) report.pruned.push(record);
  }
  report.keptBytes[tier] = kept;
}

/** Reads what retention needs of every session of a plane: segments, sizes, times, app, anchor. */
async function scanSessions(tier: string, sessionsDir: string, options: PruneOptions, now: number, report: PruneReport): Promise<SessionPlan[]> {
  const sessions: SessionPlan[] = [];
  let dir;
  try {
    dir = await opendir(sessionsDir, { bufferSize: 256 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return sessions;
    throw error;
  }
  let seen = 0;
  for await (const entry of dir) {
    if (!entry.isDirectory()) continue;
    if (++seen % SESSIONS_PER_YIELD === 0) await yieldToEvents();
    const sessionId = entry.name;
    const ledgerDir = path.join(sessionsDir, sessionId, 'ledger');
    try {
      const names = readdirSync(ledgerDir);
      const found = segmentsIn(names);
      const read = readAnchor(ledgerDir);
      if (read !== undefined && 'error' in read) throw new Error(`anchor.json ${read.error}; not pruned (verify the session)`);
      const through = read?.through_segment ?? 0;
      const byNumber = new Map<number, Unit>();
      const leftovers: string[] = [];
      for (const kind of LEDGER_KINDS) {
        for (const segment of found[kind]) {
          const file = segmentPath(ledgerDir, kind, segment);
          if (segment <= through) {
            leftovers.push(file);
            continue;
          }
          const stats = statSync(file);
          const unit = byNumber.get(segment) ?? { segment, bytes: 0, lastWrite: 0 };
          unit.bytes += stats.size;
          unit.lastWrite = Math.max(unit.lastWrite, stats.mtimeMs);
          byNumber.set(segment, unit);
        }
      }
      const units = [...byNumber.values()].sort((a, b) => a.segment - b.segment);
      if (units.length === 0) continue;
      const meta = readSessionMeta(ledgerDir);
      const last = units[units.length - 1]!;
      const open = options.writer?.isOpen(tier, sessionId) ?? false;
      const over = !open && (meta.ambient ? meta.startedAt !== undefined && now - meta.startedAt > AMBIENT_SESSION_END_MS : now - last.lastWrite > options.sessionTtlMs);
      sessions.push({
        tier,
        sessionId,
        dir: ledgerDir,
        meta,
        ...(read ? { anchor: read } : {}),
        units,
        eligible: over ? units.length : units.length - 1,
        remove: 0,
        leftovers,
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      report.errors.push({ where: ledgerDir, message: error instanceof Error ? error.message : String(error) });
    }
  }
  return sessions;
}

/** Chooses more leading segments of these sessions, oldest first, until their size is at most `maxBytes`. */
function shrink(sessions: readonly SessionPlan[], maxBytes: number, reason: string): void {
  let total = 0;
  for (const session of sessions) for (const unit of session.units.slice(session.remove)) total += unit.bytes;
  if (total <= maxBytes) return;
  const candidates: Array<{ session: SessionPlan; unit: Unit; index: number }> = [];
  for (const session of sessions) {
    for (let index = session.remove; index < session.eligible; index++) candidates.push({ session, unit: session.units[index]!, index });
  }
  candidates.sort((a, b) => a.unit.lastWrite - b.unit.lastWrite || a.unit.segment - b.unit.segment);
  for (const { session, unit, index } of candidates) {
    if (total <= maxBytes) break;
    // In order within a session: a segment goes only after the ones before it.
    if (index !== session.remove) continue;
    session.remove = index + 1;
    session.reason = reason;
    total -= unit.bytes;
  }
}

/** Anchors what goes, then removes it: the anchor first, so a crash between leaves files the next prune removes. */
function anchorAndRemove(session: SessionPlan, options: PruneOptions, reason: string, now: number): void {
  const through = session.units[session.remove - 1]!.segment;
  const checkpoints = readCheckpointsSync(path.join(session.dir, CHECKPOINT_FILE));
  const ledgers = {} as Record<LedgerKind, AnchoredLedger>;
  for (const kind of LEDGER_KINDS) ledgers[kind] = removedPart(session, kind, through, checkpoints, options.key);
  const anchor = sealAnchor(
    { anchor_type: 'L-ANCHOR', schema_version: 1, session_id: session.sessionId, through_segment: through, ledgers, pruned_at: new Date(now).toISOString(), reason },
    options.key,
  );
  writeAnchor(session.dir, anchor);
  for (const unit of session.units.slice(0, session.remove)) {
    for (const kind of LEDGER_KINDS) unlinkQuietly(segmentPath(session.dir, kind, unit.segment));
  }
  // Checkpoints into removed segments vouch for nothing any more.
  const remaining = checkpoints.filter((c) => checkpointSegment(c) > through);
  if (remaining.length !== checkpoints.length) replaceFile(path.join(session.dir, CHECKPOINT_FILE), remaining.map((c) => `${JSON.stringify(c)}\n`).join(''));
}

/** Lists the session in its plane's record, then removes its directory. */
function removeSession(session: SessionPlan, options: PruneOptions, reason: string): PrunedSession {
  const through = session.units[session.units.length - 1]!.segment;
  const checkpoints = readCheckpointsSync(path.join(session.dir, CHECKPOINT_FILE));
  const ledgers = {} as Record<LedgerKind, AnchoredLedger>;
  for (const kind of LEDGER_KINDS) ledgers[kind] = removedPart(session, kind, through, checkpoints, options.key);
  const record: PrunedSession = { sessionId: session.sessionId, ...(session.meta.appId ? { appId: session.meta.appId } : {}), segments: through, ledgers, reason };
  const planeDir = path.dirname(path.dirname(path.dirname(session.dir)));
  options.writer?.beginPrune(session.tier, session.sessionId);
  try {
    appendPrunedSessions(path.join(planeDir, PRUNED_SESSIONS_FILE), [record], options.key, (options.now ?? (() => new Date()))());
    rmSync(path.dirname(session.dir), { recursive: true, force: true });
  } finally {
    options.writer?.endPrune(session.tier, session.sessionId);
  }
  return record;
}

/** What a ledger loses up to segment `through`: cumulative counts (with the anchor's), and the last hash. */
function removedPart(session: SessionPlan, kind: LedgerKind, through: number, checkpoints: readonly LedgerCheckpoint[], key: LedgerKey | undefined): AnchoredLedger {
  const before = session.anchor?.ledgers[kind];
  let lines = before?.lines ?? 0;
  let entries = before?.entries ?? 0;
  let lastHash: string | null = before?.last_hash ?? null;
  let lastTimestamp = before?.last_timestamp;
  for (const unit of session.units) {
    if (unit.segment > through) break;
    const file = segmentPath(session.dir, kind, unit.segment);
    if (!existsSync(file)) continue;
    const last = readLastLine(file);
    const entry = last.text === undefined ? undefined : parseJsonLine(last.text, 0).entry;
    if (entry?.hash_alg !== undefined && key === undefined) {
      throw new UhlpError('UHLP_LEDGER_KEY_REQUIRED', `${file} is sealed with ledger key ${String(entry.key_id)}: anchoring what retention removes needs that key`, { file });
    }
    const hash = typeof entry?.entry_hash === 'string' ? entry.entry_hash : null;
    const closing = checkpoints.find((c) => c.closes_segment && c.ledger === kind && checkpointSegment(c) === unit.segment);
    // The closing checkpoint knows the segment's line count; a segment closed without one is counted.
    const count = closing !== undefined && closing.entry_hash === hash && last.tornBytes === 0 ? closing.line : countLines(file);
    lines += count;
    entries += unit.segment > 1 ? Math.max(0, count - 1) : count;
    if (hash !== null) {
      lastHash = hash;
      if (typeof entry?.timestamp === 'string') lastTimestamp = entry.timestamp;
    }
  }
  return { lines, entries, last_hash: lastHash, ...(lastTimestamp !== undefined ? { last_timestamp: lastTimestamp } : {}) };
}

/** Segment files an earlier prune anchored but did not get to remove. */
function removeLeftovers(session: SessionPlan, report: PruneReport): void {
  for (const file of session.leftovers) {
    try {
      report.freedBytes += statSync(file).size;
      unlinkSync(file);
    } catch {
      // Gone already.
    }
  }
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Takes the data directory's prune lock (a file naming this process); a lock whose process is gone is taken over. */
function lock(dataDir: string): () => void {
  const file = path.join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => unlinkQuietly(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(readFileSync(file, 'utf8').trim());
      if (Number.isSafeInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
        throw new Error(`another prune of ${dataDir} is running (pid ${holder}, ${file})`);
      }
      unlinkQuietly(file);
    }
  }
  throw new Error(`cannot take the prune lock ${file}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
