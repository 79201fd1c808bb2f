/**
 * The one builder of runtime-state keys. Every key lives under a configurable
 * prefix, so several cores (or tests) can share a Redis without seeing each
 * other's data, and a prefix can be dropped as a whole. Segments that come from
 * callers (app ids, idempotency keys, resources) are percent-encoded so a `:` in
 * one can never make two different tuples produce the same key; kv keys are the
 * last segment and stay raw so that a prefix scan is a plain key-prefix match.
 */

/** The default key prefix. */
export const DEFAULT_KEY_PREFIX = 'uhlp:';

export class RuntimeKeys {
  /** @param prefix Put in front of every key. @defaultValue `uhlp:` */
  constructor(readonly prefix: string = DEFAULT_KEY_PREFIX) {}

  session(id: string): string {
    return `${this.prefix}session:${encode(id)}`;
  }

  kv(key: string): string {
    return `${this.prefix}kv:${key}`;
  }

  /** The part of every kv key in front of the caller's key, for prefix scans. */
  kvNamespace(): string {
    return `${this.prefix}kv:`;
  }

  lease(resource: string): string {
    return `${this.prefix}lease:${encode(resource)}`;
  }

  idempotency(appId: string, key: string): string {
    return `${this.prefix}idem:${encode(appId)}:${encode(key)}`;
  }

  rateLimit(appId: string): string {
    return `${this.prefix}rate:${encode(appId)}`;
  }

  oracleCounters(appId: string, componentId: string): string {
    return `${this.prefix}oracle:${encode(appId)}:${encode(componentId)}`;
  }

  /** The sample reservoir of one LLM component at one revision of its definition. */
  oracleSamples(appId: string, componentId: string, revision: string): string {
    return `${this.prefix}oracle-samples:${encode(appId)}:${encode(componentId)}:${encode(revision)}`;
  }

  /** The oracle's record of a component (stage, candidate, promotion). */
  oracleRecord(appId: string, componentId: string): string {
    return `${this.prefix}oracle-record:${encode(appId)}:${encode(componentId)}`;
  }

  /** The candidates kept for a component, newest first. */
  oracleCandidates(appId: string, componentId: string): string {
    return `${this.prefix}oracle-candidates:${encode(appId)}:${encode(componentId)}`;
  }

  /** An app's LLM token count of one UTC day (`YYYY-MM-DD`). */
  llmTokens(appId: string, day: string): string {
    return `${this.prefix}llm:tokens:${encode(appId)}:${encode(day)}`;
  }

  /** One cached LLM answer of an app, by the hash of its request. */
  llmCache(appId: string, key: string): string {
    return `${this.prefix}llm:cache:${encode(appId)}:${encode(key)}`;
  }

  /** A cs-js bundle of a tenant, by its sha256. */
  fnBundle(tenant: string, sha256: string): string {
    return `${this.prefix}fn:bundle:${encode(tenant)}:${encode(sha256)}`;
  }

  /** The versions hash of one function (`seq`, `latest`, `v:<n>`). */
  fnVersions(tenant: string, namespace: string, fn: string): string {
    return `${this.prefix}fn:versions:${encode(tenant)}:${encode(namespace)}:${encode(fn)}`;
  }

  /** The aliases hash of one function (alias -> version). */
  fnAliases(tenant: string, namespace: string, fn: string): string {
    return `${this.prefix}fn:aliases:${encode(tenant)}:${encode(namespace)}:${encode(fn)}`;
  }

  /**
   * The pub/sub channel on which every write that can move a ref (a version
   * published, an alias set) is announced; not a key, but under the prefix, so
   * stores sharing a Redis under other prefixes hear none of this one's changes.
   */
  fnChanges(): string {
    return `${this.prefix}fn:changes`;
  }

  /** The log chunks of one activation. */
  fnLogs(activationId: string): string {
    return `${this.prefix}fn:logs:${encode(activationId)}`;
  }

  /**
   * The stream of one delivery route: `<prefix>queue:<app>:<name>` for a queue
   * (the documented key producers XADD to), `<prefix>cron:...`, `<prefix>callback:...`
   * and `<prefix>trigger:...` for the core's own sources.
   */
  deliveryStream(kind: string, appId: string, name: string): string {
    return `${this.prefix}${encode(kind)}:${encode(appId)}:${encode(name)}`;
  }

  /** Messages of a delivery stream waiting for their next attempt (a sorted set by due time). */
  deliveryRetries(kind: string, appId: string, name: string): string {
    return `${this.deliveryStream(kind, appId, name)}:retry`;
  }

  /** The dead letters of a delivery stream (a stream too). */
  deliveryDead(kind: string, appId: string, name: string): string {
    return `${this.deliveryStream(kind, appId, name)}:dead`;
  }

  /** The claim of one cron slot (epoch ms of the scheduled time): the core that sets it fires the slot. */
  cronSlot(appId: string, jobId: string, slotMs: number): string {
    return `${this.prefix}cronslot:${encode(appId)}:${encode(jobId)}:${slotMs}`;
  }

  /** The last slot of a cron job that was fired (epoch ms). */
  cronLast(appId: string, jobId: string): string {
    return `${this.prefix}cronlast:${encode(appId)}:${encode(jobId)}`;
  }

  /** Marks a single-use token (a callback token's id) as used. */
  usedToken(id: string): string {
    return `${this.prefix}used:${encode(id)}`;
  }

  /** The state and result of an async invocation. */
  invocation(id: string): string {
    return `${this.prefix}invocation:${encode(id)}`;
  }

  /** The mark that a run is to be cancelled, which the core driving it polls (a string key with the run's TTL). */
  runCancel(id: string): string {
    return `${this.prefix}run-cancel:${encode(id)}`;
  }

  /** One workflow run record (a hash: version and JSON). */
  run(id: string): string {
    return `${this.prefix}run:${encode(id)}`;
  }

  /** The sorted set of active runs' ids (score: when they became active). */
  activeRuns(): string {
    return `${this.prefix}runs:active`;
  }

  /** The sorted set of every run's id the console lists (score: creation time, ms). */
  runIndex(): string {
    return `${this.prefix}runs:index`;
  }

  /** The hash of those runs' summaries (field: run id; value: JSON). */
  runSummaries(): string {
    return `${this.prefix}runs:summaries`;
  }

  /** A SCAN MATCH pattern for every key under the prefix (cleanup in tests and tools). */
  /** One core's capped list of one app's finished turns, newest first (src/turns/turn-journal.ts). */
  turnJournal(app: string, core: string): string {
    return `${this.prefix}turns:${encode(app)}:${encode(core)}`;
  }

  /** The cores that wrote turns of `app`, scored by when they last did. */
  turnJournalCores(app: string): string {
    return `${this.prefix}turns-cores:${encode(app)}`;
  }

  /** The apps whose turns some core wrote, scored by when one last did. */
  turnJournalApps(): string {
    return `${this.prefix}turns-apps`;
  }

  everything(): string {
    return `${escapeGlob(this.prefix)}*`;
  }
}

function encode(segment: string): string {
  return segment.replace(/[%:*?[\]\\]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** Escapes Redis glob metacharacters so a literal string can head a SCAN MATCH pattern. */
export function escapeGlob(literal: string): string {
  return literal.replace(/[*?[\]\\^]/g, (c) => `\\${c}`);
}
