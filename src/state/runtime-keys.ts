/**
 * The one builder of runtime-state keys. Every key lives under a configurable
 * prefix, so several cores (or tests) can share a Redis without seeing each
 * other's data, and a prefix can be dropped as a whole. Segments that come from
 * callers (app ids, idempotency keys, resources) are percent-encoded so a `:` in
 * one can never make two different tuples produce the same key; kv keys are the
 * last segment and stay raw so that a prefix scan is a plain key-prefix match.
 *
 * Redis Cluster runs a script or a MULTI only when all its keys hash to one
 * slot. Keys used together are placed with a hash tag: the key that anchors a
 * family (a delivery stream, the active-run set's neighbours) keeps its name,
 * and each companion is `{<anchor>}:<suffix>`, so Redis hashes only the anchor's
 * name (which holds no braces) and both land in its slot. The same names are
 * used on a single Redis, where a tag changes nothing: a single node moves to
 * Cluster as it is. docs/runtime-state.md has the layout.
 */

/** The default key prefix. */
export const DEFAULT_KEY_PREFIX = 'uhlp:';

export class RuntimeKeys {
  /** @param prefix Put in front of every key. @defaultValue `uhlp:` */
  constructor(readonly prefix: string = DEFAULT_KEY_PREFIX) {
    // A brace in the prefix would make it (part of) every key's hash tag and break the companions' placement.
    if (/[{}]/.test(prefix)) throw new Error(`the runtime-state key prefix must not hold { or }, got "${prefix.slice(0, 80)}"`);
  }

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

  /**
   * An once-only record. A delivery's record (its key made by deliveryOnceKey)
   * sits in its stream's slot, since one script completes it and acknowledges the
   * message; any other record (an Idempotency-Key) in a slot of its own.
   */
  idempotency(appId: string, key: string): string {
    const delivery = DELIVERY_ONCE_KEY.exec(key);
    if (delivery) return companion(this.deliveryStream(delivery[1]!, appId, delivery[2]!), `once:${encode(delivery[3]!)}`);
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
    return companion(this.deliveryStream(kind, appId, name), 'retry');
  }

  /** The dead letters of a delivery stream (a stream too). */
  deliveryDead(kind: string, appId: string, name: string): string {
    return companion(this.deliveryStream(kind, appId, name), 'dead');
  }

  /**
   * The retry set and dead-letter stream as versions before the Cluster layout
   * named them (`<stream>:retry`, `<stream>:dead`): a single Redis may still hold
   * them, and the delivery store drains them into the names above.
   */
  legacyDeliveryCompanion(kind: string, appId: string, name: string, suffix: 'retry' | 'dead'): string {
    return `${this.deliveryStream(kind, appId, name)}:${suffix}`;
  }

  /** The claim of one cron slot (epoch ms of the scheduled time): the core that sets it fires the slot. */
  cronSlot(appId: string, jobId: string, slotMs: number): string {
    return companion(this.deliveryStream('cron', appId, jobId), `slot:${slotMs}`);
  }

  /** The last slot of a cron job that was fired (epoch ms). */
  cronLast(appId: string, jobId: string): string {
    return companion(this.deliveryStream('cron', appId, jobId), 'last');
  }

  /** The last fired slot as versions before the Cluster layout named it; read as well, so an upgrade fires no slot twice. */
  legacyCronLast(appId: string, jobId: string): string {
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

  /** The order of the requests waiting for a session's active run to end (a sorted set: ticket by arrival). */
  sessionQueue(sessionId: string): string {
    return `${this.prefix}session-queue:${encode(sessionId)}`;
  }

  /** Each waiting ticket's expiry and the queue's arrival counter (a hash in the queue's slot). */
  sessionQueueTickets(sessionId: string): string {
    return companion(this.sessionQueue(sessionId), 'tickets');
  }

  /** One workflow run record (a hash: version and JSON). */
  run(id: string): string {
    return companion(this.activeRuns(), `run:${encode(id)}`);
  }

  /** A run record as versions before the Cluster layout named it (redis-run-store.ts moves it on first touch). */
  legacyRun(id: string): string {
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
    return companion(this.runIndex(), 'summaries');
  }

  /** One core's capped list of one app's finished turns, newest first (src/turns/turn-journal.ts); in the slot of the app's cores' set, written with it. */
  turnJournal(app: string, core: string): string {
    return companion(this.turnJournalCores(app), encode(core));
  }

  /** The cores that wrote turns of `app`, scored by when they last did. */
  turnJournalCores(app: string): string {
    return `${this.prefix}turns-cores:${encode(app)}`;
  }

  /** The apps whose turns some core wrote, scored by when one last did. */
  turnJournalApps(): string {
    return `${this.prefix}turns-apps`;
  }

  /**
   * The tag of one flow gate's keys (flow-store.ts): a route's (component's)
   * concurrency, throttle or debounce key. Not a key itself; its companions
   * below share its slot, so one script moves a holder between them.
   */
  flowGate(app: string, scope: string, kind: string, key: string): string {
    return `${this.prefix}flow:${encode(app)}:${encode(scope)}:${encode(kind)}:${encode(key)}`;
  }

  /** A flow gate's slots (a sorted set: holder scored by when its slot expires, ms). */
  flowSlots(gate: string): string {
    return companion(gate, 'slots');
  }

  /** A flow gate's waiting holders (a sorted set: `<seq>:<holder>` scored by minus its priority, so equal priorities keep arrival order). */
  flowWaiting(gate: string): string {
    return companion(gate, 'waiting');
  }

  /** When each waiting holder's wait lapses unless it asks again (a sorted set of the same members, scored in ms). */
  flowWaitExpiry(gate: string): string {
    return companion(gate, 'wait-expiry');
  }

  /** The holder -> waiting member hash, and the arrival counter (field `#seq`) of a flow gate. */
  flowHolders(gate: string): string {
    return companion(gate, 'holders');
  }

  /** The latest event of a debounce key (a string with a TTL). */
  flowLatest(gate: string): string {
    return companion(gate, 'latest');
  }

  /** The gates with waiting holders, for listing (a sorted set: JSON [app, scope, kind, key] scored by when one last waited, ms). */
  flowWaitingIndex(): string {
    return `${this.prefix}flow-waiting`;
  }

  /** A SCAN MATCH pattern for every key under the prefix (cleanup in tests and tools). */
  everything(): string {
    return `${escapeGlob(this.prefix)}*`;
  }
}

/**
 * A delivery's once-only key (its route and invocation id), as the consumer
 * claims it; idempotency() reads the route back to place the record.
 */
export function deliveryOnceKey(kind: string, name: string, invocationId: string): string {
  return `${kind}:${name}:${invocationId}`;
}

/** kind, route name (source names hold no `:`), invocation id. */
const DELIVERY_ONCE_KEY = /^(queue|cron|callback|trigger):([^:]+):(.+)$/s;

/**
 * The part of `key` Redis Cluster hashes: the text between the first `{` and the
 * next `}` when that is not empty, else the whole key. Keys with the same tag
 * share a slot.
 */
export function hashTag(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/** A key in `anchor`'s slot: Redis hashes only the text between the first `{` and the next `}`. */
function companion(anchor: string, suffix: string): string {
  return `{${anchor}}:${suffix}`;
}

function encode(segment: string): string {
  return segment.replace(/[%:*?[\]\\{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** Escapes Redis glob metacharacters so a literal string can head a SCAN MATCH pattern. */
export function escapeGlob(literal: string): string {
  return literal.replace(/[*?[\]\\^]/g, (c) => `\\${c}`);
}
