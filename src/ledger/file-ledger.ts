/**
 * The file ledger: per session, `exec.jsonl` and `evidence.jsonl` (both created
 * when the session starts, FR-RT-018), one hash-chained JSON line per turn in
 * each, written for every turn whatever its status. Appends to one file are
 * serialized in this process (a queue per file), so concurrent turns never
 * interleave or fork the chain; one core owns a session, so no other process
 * appends to the same file. The core runs it on its ledger thread
 * (ledger-worker.ts), so appends are plain blocking writes: a hop to the I/O
 * thread pool would cost more than the write.
 */
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { mkdir, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { UhlpError } from '../errors.js';
import { assertSessionId } from '../state/session-id.js';
import { checkpointDistrust, latestCheckpoint, readCheckpoints, sealCheckpoint, type LedgerCheckpoint } from './ledger-checkpoints.js';
import { chainErrorCode, parseJsonLines, verifyChain } from './ledger-chain.js';
import { evidenceEntryJson, execEntryJson } from './entry-json.js';
import {
  LEDGER_SCHEMA_VERSION,
  sha256,
  type CapabilityViolationRecord,
  type EvidenceEntry,
  type EvidenceRef,
  type ExecEntry,
  type ExternalCall,
  type LedgerEntry,
  type LedgerKind,
  type RealizedWriteRef,
} from './ledger-entry.js';
import { KEYED_HASH_ALG, ledgerKeyring, type LedgerKey, type LedgerKeyring } from './ledger-key.js';
import { CHECKPOINT_FILE, checkTier, LEDGER_FILES, sessionLedgerDir } from './ledger-paths.js';

export interface FileLedgerOptions {
  /** The core's data directory (`--data-dir`). */
  dataDir: string;
  /** The deployment mode; ledgers go under `planes/<tier>/`. */
  tier: string;
  /** Clock for entry timestamps. @defaultValue `() => new Date()` */
  now?: () => Date;
  /** fsync each append before it resolves (survives power loss, costs a disk flush per entry). @defaultValue false */
  sync?: boolean;
  /**
   * Seal entries and checkpoints with this key (HMAC-SHA256) instead of plain
   * sha256, so that rewriting a ledger needs the key (ledger-key.ts).
   * @defaultValue none: plain sha256
   */
  key?: LedgerKey;
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

/** Ledger files kept open at once. */
const MAX_OPEN_LEDGERS = 64;
/** Sessions whose ledger paths are remembered. */
const MAX_CACHED_SESSIONS = 4096;

interface Tail {
  hash: string | null;
  line: number;
}

export class FileLedger {
  private readonly dataDir: string;
  private readonly tier: string;
  private readonly now: () => Date;
  private readonly sync: boolean;
  private readonly key: LedgerKey | undefined;
  private readonly keys: LedgerKeyring | undefined;
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly tails = new Map<string, Tail>();
  /** Lines waiting for the next write of their file (group commit). */
  private readonly batches = new Map<string, { text: string; waiters: Array<{ resolve: () => void; reject: (error: unknown) => void }> }>();
  /** The write in flight (and the ones queued behind it) per file. */
  private readonly flushes = new Map<string, Promise<void>>();
  /** Ledger file paths per session, so that an append does not rebuild and recheck them. */
  private readonly files = new Map<string, Record<LedgerKind, string>>();
  /** Open descriptors of recently appended ledgers, least recently used first. */
  private readonly handles = new Map<string, number>();

  constructor(options: FileLedgerOptions) {
    checkTier(options.tier);
    this.dataDir = options.dataDir;
    this.tier = options.tier;
    this.now = options.now ?? (() => new Date());
    this.sync = options.sync ?? false;
    this.key = options.key;
    this.keys = options.key === undefined ? undefined : ledgerKeyring([options.key]);
  }

  /** Creates the session's ledger directory and both ledger files (empty), if missing. */
  async startSession(sessionId: string): Promise<void> {
    const dir = sessionLedgerDir(this.dataDir, this.tier, sessionId);
    await mkdir(dir, { recursive: true });
    for (const name of Object.values(LEDGER_FILES)) {
      const handle = await open(path.join(dir, name), 'a');
      await handle.close();
    }
  }

  /** Forgets the cached chain tails of a session (call when it ends; appends after it reread the files). */
  forgetSession(sessionId: string): void {
    const files = [this.fileOf(sessionId, 'exec'), this.fileOf(sessionId, 'evidence')];
    this.files.delete(sessionId);
    for (const file of files) {
      this.tails.delete(file);
      const handle = this.handles.get(file);
      // Closed once appends already queued for the file are done.
      if (handle !== undefined) void (this.queues.get(file) ?? Promise.resolve()).then(() => this.drain(file)).then(() => {
        if (this.handles.get(file) === handle) {
          this.handles.delete(file);
          closeQuietly(handle);
        }
      });
    }
  }

  async appendExec(input: ExecInput): Promise<ExecEntry> {
    return this.append(input.sessionId, 'exec', (previous) => this.buildExec(input, previous));
  }

  async appendEvidence(input: EvidenceInput): Promise<EvidenceEntry> {
    return this.append(input.sessionId, 'evidence', (previous) => this.buildEvidence(input, previous));
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
    return seal(entry, this.key);
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
    return seal(entry, this.key);
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
   * Writes the turns of a batch, in order, as recordTurn would one by one. The
   * common case, a session whose chain tails are known and whose files have
   * nothing queued, is chained on the spot and written with one write per file
   * for the whole batch; a session that needs its tails read (or has appends
   * queued) goes through recordTurn, and so do its later turns in the batch,
   * which keeps each file's order. Resolves with the turns that failed.
   */
  async recordTurns(inputs: readonly TurnInput[]): Promise<Array<{ input: TurnInput; error: unknown }>> {
    const failed: Array<{ input: TurnInput; error: unknown }> = [];
    const texts = new Map<string, { text: string; inputs: TurnInput[] }>();
    const queued = new Set<string>();
    const later: TurnInput[] = [];
    for (const input of inputs) {
      const execFile = this.fileOf(input.sessionId, 'exec');
      const evidenceFile = this.fileOf(input.sessionId, 'evidence');
      const execTail = this.tails.get(execFile);
      const evidenceTail = this.tails.get(evidenceFile);
      if (execTail === undefined || evidenceTail === undefined || queued.has(input.sessionId) || this.busy(execFile) || this.busy(evidenceFile)) {
        queued.add(input.sessionId);
        later.push(input);
        continue;
      }
      try {
        // Both entries are built before either tail moves: a bad input fails whole.
        const exec = this.buildExec(input, execTail.hash);
        const evidence = this.buildEvidence(input, evidenceTail.hash);
        this.tails.set(execFile, { hash: exec.entry.entry_hash, line: execTail.line + 1 });
        this.tails.set(evidenceFile, { hash: evidence.entry.entry_hash, line: evidenceTail.line + 1 });
        addLine(texts, execFile, exec.line, input);
        addLine(texts, evidenceFile, evidence.line, input);
      } catch (error) {
        failed.push({ input, error });
      }
    }
    for (const [file, { text, inputs: written }] of texts) {
      try {
        this.write(file, text);
      } catch (error) {
        // The lines did not land: the next append rereads the file's real tail.
        this.tails.delete(file);
        for (const input of written) failed.push({ input, error });
      }
    }
    // In order: each append queues behind the one before it on the same file.
    await Promise.all(later.map((input) => this.recordTurn(input).catch((error: unknown) => failed.push({ input, error }))));
    return failed;
  }

  /** Appends to the file are queued or being written, so a new line must wait its turn. */
  private busy(file: string): boolean {
    return this.queues.has(file) || this.batches.has(file) || this.flushes.has(file);
  }

  /**
   * Records a checkpoint at the current end of a ledger with the caller's replay
   * state. The chain up to that end is verified first (from the previous
   * checkpoint), so a checkpoint never vouches for a broken chain.
   */
  async checkpoint(sessionId: string, ledger: LedgerKind, state: unknown): Promise<LedgerCheckpoint> {
    const dir = sessionLedgerDir(this.dataDir, this.tier, sessionId);
    const file = path.join(dir, LEDGER_FILES[ledger]);
    return this.enqueue(file, async () => {
      await this.drain(file);
      const checkpointFile = path.join(dir, CHECKPOINT_FILE);
      const previous = latestCheckpoint(await readCheckpoints(checkpointFile), ledger);
      const distrust = previous && checkpointDistrust(previous, this.keys);
      if (previous && distrust) {
        throw new UhlpError('UHLP_LEDGER_INTEGRITY', `${checkpointFile}: the checkpoint of ${ledger} line ${previous.line} ${distrust}`, {
          file: checkpointFile,
          line: previous.line,
          code: 'CHECKPOINT_MISMATCH',
        });
      }
      const result = verifyChain(file, parseJsonLines(await this.readLedger(file, sessionId)), previous, { keys: this.keys });
      if (result.problem) {
        throw new UhlpError(chainErrorCode(result.problem), `${file}:${result.problem.line}: ${result.problem.message}`, result.problem);
      }
      if (result.lastHash === null) {
        throw new UhlpError('UHLP_STATE_INPUT_INVALID', `the ${ledger} ledger of ${sessionId} has no hashed entry to checkpoint`, { field: 'ledger' });
      }
      const last = result.entries[result.entries.length - 1]?.entry ?? (previous ? { timestamp: previous.entry_timestamp } : {});
      const checkpoint = sealCheckpoint(
        {
          ledger,
          line: result.lastLine,
          entry_hash: result.lastHash,
          entry_timestamp: String(last.timestamp ?? ''),
          created_at: this.now().toISOString(),
          state,
        },
        this.key,
      );
      this.write(checkpointFile, `${JSON.stringify(checkpoint)}\n`);
      return checkpoint;
    });
  }

  private fileOf(sessionId: string, kind: LedgerKind): string {
    let files = this.files.get(sessionId);
    if (files === undefined) {
      const dir = sessionLedgerDir(this.dataDir, this.tier, sessionId);
      files = { exec: path.join(dir, LEDGER_FILES.exec), evidence: path.join(dir, LEDGER_FILES.evidence) };
      // Bounded: a core that sees many short sessions recomputes the paths of old ones.
      if (this.files.size >= MAX_CACHED_SESSIONS) this.files.clear();
      this.files.set(sessionId, files);
    }
    return files[kind];
  }

  private async append<E extends LedgerEntry>(sessionId: string, kind: LedgerKind, build: (previous: string | null) => Sealed<E>): Promise<E> {
    const file = this.fileOf(sessionId, kind);
    const tail = this.tails.get(file);
    // The common case, a busy session: the tail is known and nothing is queued for
    // the file, so the entry is chained and committed at once, with no queue turn.
    if (tail !== undefined && !this.queues.has(file)) {
      const built = this.chain(file, tail, build);
      await this.commit(file, built.line);
      return built.entry;
    }
    let written: Promise<void> | undefined;
    const entry = await this.enqueue(file, async () => {
      const built = this.chain(file, this.tails.get(file) ?? (await this.loadTail(file, sessionId)), build);
      written = this.commit(file, built.line);
      return built.entry;
    });
    await written;
    return entry;
  }

  /** Builds the next entry of a file on its tail and moves the tail to it. */
  private chain<E extends LedgerEntry>(file: string, tail: Tail, build: (previous: string | null) => Sealed<E>): Sealed<E> {
    const built = build(tail.hash);
    this.tails.set(file, { hash: built.entry.entry_hash, line: tail.line + 1 });
    return built;
  }

  /**
   * Group commit: lines appended while a write of the same file is in flight are
   * written together by the next one, so a busy ledger costs one write per batch,
   * not per entry. Entries are chained in the order they were built, which is the
   * order they land in. A failed write fails its batch and the one queued behind it
   * (those entries link to lines that never landed) and drops the cached tail, so
   * the next entry is chained to what is really on disk.
   */
  private commit(file: string, line: string): Promise<void> {
    let batch = this.batches.get(file);
    if (!batch) {
      batch = { text: '', waiters: [] };
      this.batches.set(file, batch);
      const previous = this.flushes.get(file) ?? Promise.resolve();
      const flush = previous.then(() => this.flush(file));
      this.flushes.set(file, flush);
      void flush.then(() => {
        if (this.flushes.get(file) === flush) this.flushes.delete(file);
      });
    }
    const pending = batch;
    pending.text += line;
    return new Promise<void>((resolve, reject) => pending.waiters.push({ resolve, reject }));
  }

  private async flush(file: string): Promise<void> {
    const batch = this.batches.get(file);
    if (!batch) return;
    this.batches.delete(file);
    try {
      this.write(file, batch.text);
      for (const waiter of batch.waiters) waiter.resolve();
    } catch (error) {
      this.tails.delete(file);
      const behind = this.batches.get(file);
      this.batches.delete(file);
      for (const waiter of [...batch.waiters, ...(behind?.waiters ?? [])]) waiter.reject(error);
    }
  }

  /** Resolves when every line committed to the file so far is written. */
  private async drain(file: string): Promise<void> {
    while (this.flushes.has(file)) await this.flushes.get(file);
  }

  private async loadTail(file: string, sessionId: string): Promise<Tail> {
    const lines = parseJsonLines(await this.readLedger(file, sessionId));
    const last = lines[lines.length - 1];
    if (!last) return { hash: null, line: 0 };
    if (!last.entry) {
      throw new UhlpError('UHLP_LEDGER_INTEGRITY', `${file}:${last.line}: last line is not a JSON entry (torn write?); not appending to it`, {
        file,
        line: last.line,
      });
    }
    if (last.entry.hash_alg === KEYED_HASH_ALG && this.key === undefined) {
      // Appending plain entries would downgrade the chain: whoever rewrites it later would need no key.
      throw new UhlpError(
        'UHLP_LEDGER_KEY_REQUIRED',
        `${file} is sealed with ledger key ${String(last.entry.key_id)}; this core has no ledger key (UHLP_LEDGER_KEY_FILE or UHLP_LEDGER_KEY), so it does not append plain entries to it`,
        { file, keyId: last.entry.key_id },
      );
    }
    const hash = last.entry.entry_hash;
    return { hash: typeof hash === 'string' ? hash : null, line: last.line };
  }

  private async readLedger(file: string, sessionId: string): Promise<string> {
    try {
      return await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new UhlpError('UHLP_SESSION_NOT_FOUND', `the ledgers of session ${sessionId} were not started`, { sessionId });
      }
      throw error;
    }
  }

  private write(file: string, text: string): void {
    // One write() on an O_APPEND descriptor: the line lands whole at the end. Busy
    // ledgers keep their descriptor open (a few, least recently used closed first),
    // so an append is one system call, not three.
    let handle = this.handles.get(file);
    if (handle !== undefined) {
      this.handles.delete(file);
    } else {
      handle = openSync(file, 'a');
      if (this.handles.size >= MAX_OPEN_LEDGERS) {
        const [oldestFile, oldest] = this.handles.entries().next().value as [string, number];
        this.handles.delete(oldestFile);
        closeQuietly(oldest);
      }
    }
    this.handles.set(file, handle);
    writeSync(handle, text);
    if (this.sync) fdatasyncSync(handle);
  }

  /** Closes the descriptors kept open; later appends open them again. */
  async close(): Promise<void> {
    await Promise.all([...this.queues.values()]);
    await Promise.all([...this.flushes.keys()].map((file) => this.drain(file)));
    for (const handle of this.handles.values()) closeQuietly(handle);
    this.handles.clear();
  }

  private enqueue<T>(file: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(file) ?? Promise.resolve();
    const run = previous.then(task, task);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(file, settled);
    // Forget an idle queue so a long-running core does not keep one per session forever.
    void settled.then(() => {
      if (this.queues.get(file) === settled) this.queues.delete(file);
    });
    return run;
  }
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
interface Sealed<E extends LedgerEntry> {
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
function seal<E extends LedgerEntry>(entry: E, key: LedgerKey | undefined): Sealed<E> {
  if (key !== undefined) {
    entry.hash_alg = KEYED_HASH_ALG;
    entry.key_id = key.id;
  }
  const canonical = entry.entry_type === 'L-EXEC' ? execEntryJson(entry) : evidenceEntryJson(entry);
  const hash = key === undefined ? sha256(canonical) : key.seal(canonical);
  entry.entry_hash = hash;
  return { entry, line: `${canonical.slice(0, -1)},"entry_hash":"${hash}"}\n` };
}

function addLine(texts: Map<string, { text: string; inputs: TurnInput[] }>, file: string, line: string, input: TurnInput): void {
  const pending = texts.get(file);
  if (pending === undefined) texts.set(file, { text: line, inputs: [input] });
  else {
    pending.text += line;
    pending.inputs.push(input);
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed: nothing to release.
  }
}
