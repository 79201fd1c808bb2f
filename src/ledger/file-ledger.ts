/**
 * The file ledger: per session, an exec and an evidence ledger (both created
 * when the session starts, FR-RT-018), one hash-chained JSON line per turn in
 * each, written for every turn whatever its status. One core owns a session, so
 * no other process appends to its files.
 *
 * Each ledger is a series of segments (ledger-paths.ts): when either file of
 * the current segment reaches `segmentBytes`, or the writer has written to it
 * for `segmentMs`, both are closed together (so segment n of exec and of
 * evidence hold the same turns) and the next pair opens with a header line that
 * links to the last hash of the segment before; a closing checkpoint records
 * where each closed segment ends. Retention removes whole old segments
 * (ledger-prune.ts), and verification reads segments in parallel.
 *
 * The core runs this on its ledger thread (ledger-worker.ts), so every file
 * operation is a plain blocking call: a hop to the I/O thread pool would cost
 * more than the write, and nothing here can interleave. A batch of turns is
 * written with one write per file (group commit), then flushed to disk with
 * `sync` (the `fsync` durability).
 */
import { closeSync, fdatasyncSync, fstatSync, mkdirSync, openSync, readdirSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { UhlpError } from '../shared/errors.js';
import { assertSessionId } from '../state/session-id.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { fsyncDir } from './durable-files.js';
import { chainErrorCode, parseJsonLine } from './ledger-chain.js';
import { checkpointDistrust, latestCheckpoint, readCheckpointsSync, sealCheckpoint, type LedgerCheckpoint } from './ledger-checkpoints.js';
import { readLayout, segmentPath, verifyLedgerHere } from './ledger-join.js';
import { evidenceEntryJson, execEntryJson } from './entry-json.js';
import {
  LEDGER_SCHEMA_VERSION,
  SEGMENT_ENTRY_TYPE,
  sha256,
  type CapabilityViolationRecord,
  type EvidenceEntry,
  type EvidenceRef,
  type ExecEntry,
  type ExternalCall,
  type LedgerEntry,
  type LedgerKind,
  type RealizedWriteRef,
  type SegmentEntry,
} from './ledger-entry.js';
import { KEYED_HASH_ALG, ledgerKeyring, type LedgerKey, type LedgerKeyring } from './ledger-key.js';
import { CHECKPOINT_FILE, checkTier, LEDGER_FILES, LEDGER_KINDS, SESSION_META_FILE, segmentsIn, sessionLedgerDir } from './ledger-paths.js';
import { countLines, readLastLine, readLines } from './line-reader.js';

/** Default size at which a segment is closed: 64 MiB, a few seconds of verification, about 170 000 turns of a trivial route. */
export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
/** Default time after which a segment is closed: one hour (retention's age limits act on whole segments). */
export const DEFAULT_SEGMENT_MS = 3600_000;

export interface FileLedgerOptions {
  /** The core's data directory (`--data-dir`). */
  dataDir: string;
  /** The deployment mode; ledgers go under `planes/<tier>/`. */
  tier: string;
  /** Clock for entry timestamps. @defaultValue `() => new Date()` */
  now?: () => Date;
  /**
   * Flush every batch (and every new file) to disk before it counts as written:
   * survives a power loss, costs a disk flush per batch and file.
   * @defaultValue false
   */
  sync?: boolean;
  /**
   * Seal entries and checkpoints with this key (HMAC-SHA256) instead of plain
   * sha256, so that rewriting a ledger needs the key (ledger-key.ts).
   * @defaultValue none: plain sha256
   */
  key?: LedgerKey;
  /** A segment is closed once either of its files reaches this size, bytes. @defaultValue DEFAULT_SEGMENT_BYTES */
  segmentBytes?: number;
  /** ...or once this writer has written to it this long, ms. @defaultValue DEFAULT_SEGMENT_MS */
  segmentMs?: number;
}

/** What the core knows of a session when it starts it (`session.json`; retention reads it). */
export interface SessionStart {
  appId?: string;
  /** A turn of the app's ambient session (requests that named no session), which ends within the hour. */
  ambient?: boolean;
}

export interface ExecInput {
  sessionId: string;
  /** 1 for the first turn of the session. */
  turnNumber: number;
  queryHash: string;
  /** Null when the turn failed before producing a result. */
  resultHash: string | null;
  /** `ok`, `error`, `timeout`, ... whatever the turn ended with. */
  status: string;
  /** The execution's id (X-Request-ID). @defaultValue none */
  requestId?: string;
}

export interface EvidenceInput {
  sessionId: string;
  turnNumber: number;
  status: string;
  workOrderId?: string;
  declaredReads?: EvidenceRef[];
  declaredWrites?: EvidenceRef[];
  realizedWrites?: RealizedWriteRef[];
  externalCalls?: ExternalCall[];
  capabilityViolations?: CapabilityViolationRecord[];
}

export type TurnInput = ExecInput & Omit<EvidenceInput, 'sessionId' | 'turnNumber' | 'status'>;

/** Sessions kept open at once (two descriptors each); the least recently written is closed first. */
const MAX_OPEN_SESSIONS = 64;

interface Tail {
  hash: string | null;
  /** The line of the last entry; -1 when not counted yet (the tail was read from the end of the file). */
  line: number;
  timestamp?: string;
}

/** A session being written: its current segment, open descriptors and chain tails. */
interface OpenSession {
  readonly id: string;
  readonly dir: string;
  segment: number;
  /** When this writer began writing the segment (its age for rotation). */
  openedAt: number;
  /** The segment holds turns, not just its header: an empty segment is never closed. */
  hasTurns: boolean;
  readonly files: Record<LedgerKind, string>;
  readonly fds: Record<LedgerKind, number>;
  readonly bytes: Record<LedgerKind, number>;
  readonly tails: Record<LedgerKind, Tail>;
}

interface Pending {
  exec: string;
  evidence: string;
  inputs: TurnInput[];
}

export class FileLedger {
  private readonly dataDir: string;
  private readonly tier: string;
  private readonly now: () => Date;
  private readonly sync: boolean;
  private readonly key: LedgerKey | undefined;
  private readonly keys: LedgerKeyring | undefined;
  private readonly segmentBytes: number;
  private readonly segmentMs: number;
  /** Open sessions, least recently written first. */
  private readonly open = new Map<string, OpenSession>();
  /** Sessions retention is removing: nothing is appended to them. */
  private readonly pruning = new Set<string>();

  constructor(options: FileLedgerOptions) {
    checkTier(options.tier);
    this.dataDir = options.dataDir;
    this.tier = options.tier;
    this.now = options.now ?? (() => new Date());
    this.sync = options.sync ?? false;
    this.key = options.key;
    this.keys = options.key === undefined ? undefined : ledgerKeyring([options.key]);
    this.segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    this.segmentMs = options.segmentMs ?? DEFAULT_SEGMENT_MS;
  }

  /** Creates the session's ledger directory, both ledger files (empty) and its `session.json`, if missing. */
  async startSession(sessionId: string, meta: SessionStart = {}): Promise<void> {
    this.startSessionSync(sessionId, meta);
  }

  startSessionSync(sessionId: string, meta: SessionStart = {}): void {
    const dir = sessionLedgerDir(this.dataDir, this.tier, sessionId);
    mkdirSync(dir, { recursive: true });
    for (const name of Object.values(LEDGER_FILES)) closeSync(openSync(path.join(dir, name), 'a'));
    try {
      const record = { session_id: sessionId, ...(meta.appId !== undefined ? { app_id: meta.appId } : {}), ambient: meta.ambient === true, started_at: this.now().toISOString() };
      writeFileSync(path.join(dir, SESSION_META_FILE), `${JSON.stringify(record)}\n`, { flag: 'wx' });
    } catch (error) {
      // Started before: the first start's record stands.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (this.sync) {
      // The new files, and the session's directory, must outlive a power loss as the entries do.
      fsyncDir(dir);
      fsyncDir(path.dirname(dir));
      fsyncDir(path.dirname(path.dirname(dir)));
    }
  }

  /** Closes a session's files and forgets its chain tails (call when it ends; a later append reads them again). */
  forgetSession(sessionId: string): void {
    const session = this.open.get(sessionId);
    if (session === undefined) return;
    this.open.delete(sessionId);
    for (const kind of LEDGER_KINDS) closeQuietly(session.fds[kind]);
  }

  /** The session is being written (its files are open). */
  isOpen(sessionId: string): boolean {
    return this.open.has(sessionId);
  }

  /** Retention is about to remove the session's ledgers: close them, and append nothing until endPrune. */
  beginPrune(sessionId: string): void {
    this.forgetSession(sessionId);
    this.pruning.add(sessionId);
  }

  endPrune(sessionId: string): void {
    this.pruning.delete(sessionId);
  }

  async appendExec(input: ExecInput): Promise<ExecEntry> {
    const session = this.session(input.sessionId);
    this.rotateIfDue(session);
    const built = this.buildExec(input, session.tails.exec.hash);
    this.writeOne(session, 'exec', built);
    return built.entry;
  }

  async appendEvidence(input: EvidenceInput): Promise<EvidenceEntry> {
    const session = this.session(input.sessionId);
    this.rotateIfDue(session);
    const built = this.buildEvidence(input, session.tails.evidence.hash);
    this.writeOne(session, 'evidence', built);
    return built.entry;
  }

  /**
   * Writes both entries of a turn. Each is attempted even if the other fails, so a
   * turn never leaves evidence without exec or the reverse because of the first write.
   */
  async recordTurn(input: TurnInput): Promise<{ exec: ExecEntry; evidence: EvidenceEntry }> {
    const [exec, evidence] = await Promise.allSettled([this.appendExec(input), this.appendEvidence(input)]);
    if (exec.status === 'rejected') throw exec.reason;
    if (evidence.status === 'rejected') throw evidence.reason;
    return { exec: exec.value, evidence: evidence.value };
  }

  /**
   * Writes the turns of a batch, in order, with one write per file (and, with
   * `sync`, one flush per file) for the whole batch. Resolves with the turns
   * that failed; a bad turn fails alone.
   */
  async recordTurns(inputs: readonly TurnInput[]): Promise<Array<{ input: TurnInput; error: unknown }>> {
    return this.recordTurnsSync(inputs);
  }

  recordTurnsSync(inputs: readonly TurnInput[]): Array<{ input: TurnInput; error: unknown }> {
    const failed: Array<{ input: TurnInput; error: unknown }> = [];
    const pending = new Map<OpenSession, Pending>();
    for (const input of inputs) {
      let session: OpenSession;
      try {
        session = this.session(input.sessionId);
        if (this.rotationDue(session)) {
          // The lines of the closing segment land before the next one opens.
          this.flush(session, pending, failed);
          if (!this.open.has(session.id)) session = this.session(input.sessionId);
          this.rotate(session);
        }
        // Both entries are built before either tail moves: a bad input fails whole.
        const exec = this.buildExec(input, session.tails.exec.hash);
        const evidence = this.buildEvidence(input, session.tails.evidence.hash);
        this.advance(session, 'exec', exec);
        this.advance(session, 'evidence', evidence);
        let batch = pending.get(session);
        if (batch === undefined) {
          batch = { exec: '', evidence: '', inputs: [] };
          pending.set(session, batch);
        }
        batch.exec += exec.line;
        batch.evidence += evidence.line;
        batch.inputs.push(input);
      } catch (error) {
        failed.push({ input, error });
      }
    }
    for (const session of [...pending.keys()]) this.flush(session, pending, failed);
    return failed;
  }

  /**
   * Records a checkpoint at the current end of a ledger with the caller's replay
   * state. The chain up to that end is verified first (from the previous
   * checkpoint), so a checkpoint never vouches for a broken chain.
   */
  async checkpoint(sessionId: string, ledger: LedgerKind, state: unknown): Promise<LedgerCheckpoint> {
    const dir = sessionLedgerDir(this.dataDir, this.tier, sessionId);
    const checkpointFile = path.join(dir, CHECKPOINT_FILE);
    const checkpoints = readCheckpointsSync(checkpointFile);
    const previous = latestCheckpoint(checkpoints, ledger);
    const distrust = previous && checkpointDistrust(previous, this.keys);
    if (previous && distrust) {
      throw new UhlpError('UHLP_LEDGER_INTEGRITY', `${checkpointFile}: the checkpoint of ${ledger} line ${previous.line} ${distrust}`, {
        file: checkpointFile,
        line: previous.line,
        code: 'CHECKPOINT_MISMATCH',
      });
    }
    const layout = readLayout(dir, checkpoints, this.keys);
    if (layout.segments[ledger].length === 0) throw new UhlpError('UHLP_SESSION_NOT_FOUND', `the ledgers of session ${sessionId} were not started`, { sessionId });
    const verdict = verifyLedgerHere(layout.ledger(ledger), { from: previous ?? null, keys: this.keys }, { keys: this.keys });
    const problem = verdict.problems[0];
    if (problem) throw new UhlpError(chainErrorCode(problem), `${problem.file}:${problem.line}: ${problem.message}`, problem);
    if (verdict.lastHash === null) {
      throw new UhlpError('UHLP_STATE_INPUT_INVALID', `the ${ledger} ledger of ${sessionId} has no hashed entry to checkpoint`, { field: 'ledger' });
    }
    const checkpoint = sealCheckpoint(
      {
        ledger,
        segment: verdict.lastSegment,
        line: verdict.lastLine,
        entry_hash: verdict.lastHash,
        entry_timestamp: verdict.lastTimestamp ?? previous?.entry_timestamp ?? '',
        created_at: this.now().toISOString(),
        state,
      },
      this.key,
    );
    this.appendCheckpoints(dir, `${JSON.stringify(checkpoint)}\n`);
    return checkpoint;
  }

  /** Closes every open file; later appends open them again. */
  async close(): Promise<void> {
    for (const id of [...this.open.keys()]) this.forgetSession(id);
  }

  /** A hashed exec entry; validates the input. */
  private buildExec(input: ExecInput, previous: string | null): Sealed<ExecEntry> {
    checkTurn(input.sessionId, input.turnNumber, input.status);
    if (typeof input.queryHash !== 'string' || input.queryHash === '') throw invalid('queryHash', 'must be a hash string');
    const entry: ExecEntry = {
      entry_type: 'L-EXEC',
      schema_version: LEDGER_SCHEMA_VERSION,
      session_id: input.sessionId,
      turn_number: input.turnNumber,
      timestamp: this.now().toISOString(),
      query_hash: input.queryHash,
      result_hash: input.resultHash,
      status: input.status,
      previous_hash: previous,
    } as ExecEntry;
    if (input.requestId !== undefined) entry.request_id = input.requestId;
    return seal(entry, execEntryJson, this.key);
  }

  /** A hashed evidence entry; validates the input. */
  private buildEvidence(input: EvidenceInput, previous: string | null): Sealed<EvidenceEntry> {
    checkTurn(input.sessionId, input.turnNumber, input.status);
    const entry: EvidenceEntry = {
      entry_type: 'L-EVIDENCE',
      schema_version: LEDGER_SCHEMA_VERSION,
      session_id: input.sessionId,
      turn_number: input.turnNumber,
      timestamp: this.now().toISOString(),
      status: input.status,
      declared_reads: input.declaredReads ?? [],
      declared_writes: input.declaredWrites ?? [],
      external_calls: input.externalCalls ?? [],
      capability_violations: input.capabilityViolations ?? [],
      previous_hash: previous,
    } as EvidenceEntry;
    if (input.workOrderId !== undefined) entry.work_order_id = input.workOrderId;
    if (input.realizedWrites?.length) entry.realized_writes = input.realizedWrites;
    return seal(entry, evidenceEntryJson, this.key);
  }

  /** The header that opens segment `segment`, continuing from `previous`. */
  private buildHeader(sessionId: string, segment: number, previous: string | null): Sealed<SegmentEntry> {
    const entry = {
      entry_type: SEGMENT_ENTRY_TYPE,
      schema_version: LEDGER_SCHEMA_VERSION,
      session_id: sessionId,
      segment,
      timestamp: this.now().toISOString(),
      previous_hash: previous,
    } as SegmentEntry;
    return seal(entry, (e) => canonicalJson(e), this.key);
  }

  /** The open session, opened (its tails read from the end of its files) if it is not. */
  private session(sessionId: string): OpenSession {
    let session = this.open.get(sessionId);
    if (session !== undefined) {
      // Most recently written last, so the first one is the one to close when too many are open.
      this.open.delete(sessionId);
      this.open.set(sessionId, session);
      return session;
    }
    session = this.load(sessionId);
    if (this.open.size >= MAX_OPEN_SESSIONS) {
      const oldest = this.open.keys().next().value as string;
      this.forgetSession(oldest);
    }
    this.open.set(sessionId, session);
    return session;
  }

  private load(sessionId: string): OpenSession {
    if (this.pruning.has(sessionId)) {
      throw new UhlpError('UHLP_SESSION_NOT_FOUND', `the ledgers of session ${sessionId} are being removed by retention`, { sessionId });
    }
    const dir = sessionLedgerDir(this.dataDir, this.tier, sessionId);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw notStarted(sessionId);
      throw error;
    }
    const found = segmentsIn(names);
    const segment = Math.max(found.exec.at(-1) ?? 0, found.evidence.at(-1) ?? 0);
    if (segment === 0 || (segment === 1 && (found.exec.length === 0 || found.evidence.length === 0))) throw notStarted(sessionId);
    const opened: Partial<Record<LedgerKind, number>> = {};
    try {
      const session: OpenSession = {
        id: sessionId,
        dir,
        segment,
        openedAt: this.now().getTime(),
        hasTurns: false,
        files: { exec: segmentPath(dir, 'exec', segment), evidence: segmentPath(dir, 'evidence', segment) },
        fds: { exec: -1, evidence: -1 },
        bytes: { exec: 0, evidence: 0 },
        tails: { exec: { hash: null, line: 0 }, evidence: { hash: null, line: 0 } },
      };
      for (const kind of LEDGER_KINDS) {
        const file = session.files[kind];
        const fd = openSync(file, 'a');
        opened[kind] = fd;
        session.fds[kind] = fd;
        const size = fstatSync(fd).size;
        if (size === 0 && segment > 1) {
          // A rotation cut short between the two ledgers (or before the header landed): open this one now.
          const header = this.buildHeader(sessionId, segment, this.readTail(segmentPath(dir, kind, segment - 1)).tail.hash);
          this.writeText(fd, header.line);
          session.tails[kind] = { hash: header.entry.entry_hash, line: 1, timestamp: header.entry.timestamp };
          session.bytes[kind] = Buffer.byteLength(header.line);
          continue;
        }
        const { tail, type } = size === 0 ? { tail: { hash: null, line: 0 }, type: undefined } : this.readTail(file);
        session.tails[kind] = tail;
        session.bytes[kind] = size;
        if (type !== undefined && type !== SEGMENT_ENTRY_TYPE) session.hasTurns = true;
      }
      return session;
    } catch (error) {
      for (const fd of Object.values(opened)) closeQuietly(fd);
      throw error;
    }
  }

  /** The last entry of a file, read from its end; refuses a torn or foreign tail, and a keyed one without the key. */
  private readTail(file: string): { tail: Tail; type: unknown } {
    const last = readLastLine(file);
    if (last.tornBytes > 0) {
      throw new UhlpError(
        'UHLP_LEDGER_INTEGRITY',
        `${file}: the last line is cut short (a write torn by a crash); not appending to it (\`uhlp ledger verify --repair\` moves it aside)`,
        { file, code: 'TORN_TAIL' },
      );
    }
    let text = last.text;
    if (text !== undefined && text.trim() === '') text = lastNonBlankLine(file);
    if (text === undefined) return { tail: { hash: null, line: 0 }, type: undefined };
    const { entry } = parseJsonLine(text, 0);
    if (!entry) {
      throw new UhlpError('UHLP_LEDGER_INTEGRITY', `${file}: last line is not a JSON entry (torn write?); not appending to it`, { file });
    }
    if (entry.hash_alg === KEYED_HASH_ALG && this.key === undefined) {
      // Appending plain entries would downgrade the chain: whoever rewrites it later would need no key.
      throw new UhlpError(
        'UHLP_LEDGER_KEY_REQUIRED',
        `${file} is sealed with ledger key ${String(entry.key_id)}; this core has no ledger key (UHLP_LEDGER_KEY_FILE or UHLP_LEDGER_KEY), so it does not append plain entries to it`,
        { file, keyId: entry.key_id },
      );
    }
    const hash = entry.entry_hash;
    return {
      tail: { hash: typeof hash === 'string' ? hash : null, line: -1, ...(typeof entry.timestamp === 'string' ? { timestamp: entry.timestamp } : {}) },
      type: entry.entry_type,
    };
  }

  private rotationDue(session: OpenSession): boolean {
    if (!session.hasTurns) return false;
    return session.bytes.exec >= this.segmentBytes || session.bytes.evidence >= this.segmentBytes || this.now().getTime() - session.openedAt >= this.segmentMs;
  }

  private rotateIfDue(session: OpenSession): void {
    if (this.rotationDue(session)) this.rotate(session);
  }

  /**
   * Closes the current segment of both ledgers and opens the next: first the new
   * files with their headers (so a crash never leaves a closing checkpoint for a
   * segment that goes on), then the closing checkpoints.
   */
  private rotate(session: OpenSession): void {
    const closed = session.segment;
    const next = closed + 1;
    const ends: Record<LedgerKind, Tail> = { exec: session.tails.exec, evidence: session.tails.evidence };
    for (const kind of LEDGER_KINDS) if (ends[kind].line < 0) ends[kind] = { ...ends[kind], line: countLines(session.files[kind]) };
    for (const kind of LEDGER_KINDS) {
      const file = segmentPath(session.dir, kind, next);
      const fd = openSync(file, 'a');
      const header = this.buildHeader(session.id, next, ends[kind].hash);
      try {
        this.writeText(fd, header.line);
      } catch (error) {
        closeSync(fd);
        // What was opened so far is picked up again by the next load.
        this.forgetSession(session.id);
        throw error;
      }
      closeQuietly(session.fds[kind]);
      session.fds[kind] = fd;
      session.files[kind] = file;
      session.bytes[kind] = Buffer.byteLength(header.line);
      session.tails[kind] = { hash: header.entry.entry_hash, line: 1, timestamp: header.entry.timestamp };
    }
    if (this.sync) fsyncDir(session.dir);
    session.segment = next;
    session.openedAt = this.now().getTime();
    session.hasTurns = false;
    let text = '';
    for (const kind of LEDGER_KINDS) {
      const end = ends[kind];
      if (end.hash === null) continue;
      const checkpoint = sealCheckpoint(
        { ledger: kind, segment: closed, line: end.line, entry_hash: end.hash, entry_timestamp: end.timestamp ?? '', created_at: this.now().toISOString(), state: null, closes_segment: true },
        this.key,
      );
      text += `${JSON.stringify(checkpoint)}\n`;
    }
    try {
      this.appendCheckpoints(session.dir, text);
    } catch {
      // A closing checkpoint only lets verification start later; the header already joins the segments.
    }
  }

  private appendCheckpoints(dir: string, text: string): void {
    if (text === '') return;
    const fd = openSync(path.join(dir, CHECKPOINT_FILE), 'a');
    try {
      this.writeText(fd, text);
    } finally {
      closeSync(fd);
    }
  }

  /** Moves a ledger's tail past an entry about to be written. */
  private advance(session: OpenSession, kind: LedgerKind, built: Sealed<LedgerEntry>): void {
    const tail = session.tails[kind];
    session.tails[kind] = { hash: built.entry.entry_hash, line: tail.line < 0 ? -1 : tail.line + 1, timestamp: built.entry.timestamp };
    session.bytes[kind] += Buffer.byteLength(built.line);
    session.hasTurns = true;
  }

  private writeOne(session: OpenSession, kind: LedgerKind, built: Sealed<LedgerEntry>): void {
    try {
      this.writeText(session.fds[kind], built.line);
    } catch (error) {
      // The line did not land: the next append reads the file's real tail.
      this.forgetSession(session.id);
      throw error;
    }
    this.advance(session, kind, built);
  }

  /** Writes a session's pending lines: one write per ledger; a failure fails the batch's turns of that session. */
  private flush(session: OpenSession, pending: Map<OpenSession, Pending>, failed: Array<{ input: TurnInput; error: unknown }>): void {
    const batch = pending.get(session);
    if (batch === undefined) return;
    pending.delete(session);
    try {
      this.writeText(session.fds.exec, batch.exec);
      this.writeText(session.fds.evidence, batch.evidence);
    } catch (error) {
      // Lines that did not land: the next append reads the files' real tails.
      this.forgetSession(session.id);
      for (const input of batch.inputs) failed.push({ input, error });
    }
  }

  /**
   * One write() on an O_APPEND descriptor: the text lands whole at the end (a
   * crash can cut it short, which verification reports as a torn tail).
   */
  private writeText(fd: number, text: string): void {
    const bytes = Buffer.from(text, 'utf8');
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    if (this.sync) fdatasyncSync(fd);
  }
}

function notStarted(sessionId: string): UhlpError {
  return new UhlpError('UHLP_SESSION_NOT_FOUND', `the ledgers of session ${sessionId} were not started`, { sessionId });
}

/** The last line that is not blank (the writer writes none; a file edited by hand may end with some). */
function lastNonBlankLine(file: string): string | undefined {
  let last: string | undefined;
  readLines(file, {
    line(buffer, start, end) {
      const text = buffer.toString('utf8', start, end);
      if (text.trim() !== '') last = text;
    },
  });
  return last;
}

function checkTurn(sessionId: string, turnNumber: number, status: string): void {
  assertSessionId(sessionId);
  if (!Number.isSafeInteger(turnNumber) || turnNumber < 1) throw invalid('turnNumber', 'must be an integer >= 1');
  if (typeof status !== 'string' || status === '') throw invalid('status', 'must be a non-empty string');
}

function invalid(field: string, message: string): UhlpError {
  return new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} ${message}`, { field });
}

/** An entry with its hash, and the line it is written as. */
interface Sealed<E extends LedgerEntry | SegmentEntry> {
  entry: E;
  line: string;
}

/**
 * Sets the entry's hash (over its canonical JSON without the hash; an HMAC under
 * the ledger key when there is one, which the entry then names) and makes its
 * line: that same canonical JSON with `entry_hash` added last, so the entry is
 * serialized once. Canonical JSON escapes newlines inside strings, so an entry is
 * always one line.
 */
function seal<E extends LedgerEntry | SegmentEntry>(entry: E, canonicalOf: (entry: E) => string, key: LedgerKey | undefined): Sealed<E> {
  if (key !== undefined) {
    entry.hash_alg = KEYED_HASH_ALG;
    entry.key_id = key.id;
  }
  const canonical = canonicalOf(entry);
  const hash = key === undefined ? sha256(canonical) : key.seal(canonical);
  entry.entry_hash = hash;
  return { entry, line: `${canonical.slice(0, -1)},"entry_hash":"${hash}"}\n` };
}

function closeQuietly(fd: number): void {
  if (fd < 0) return;
  try {
    closeSync(fd);
  } catch {
    // Already closed: nothing to release.
  }
}
