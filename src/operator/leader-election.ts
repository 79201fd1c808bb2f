/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules: a
 * candidate takes the lease when it is free or when its holder has not renewed it
 * for leaseDuration, measured on the candidate's own clock from when it last saw the
 * lease change (so clock skew between machines does not matter); every write carries
 * the resourceVersion it read, so two candidates never both win. A leader that cannot
 * renew for renewDeadline stops leading; one that stops releases the lease so another
 * takes over at once instead of after leaseDuration.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { CoordinationV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { UhlpError } from '../shared/errors.js';
import { apiStatus } from '../k8s/custom-resources.js';

export interface LeaderElectionOptions {
  /** Namespace of the Lease. */
  namespace: string;
  /** Name of the Lease. @defaultValue `uhlp-operator` */
  name?: string;
  /** This candidate's identity, written as holderIdentity. @defaultValue `<hostname>-<pid>-<random>` */
  identity?: string;
  /** How long a lease holds without renewal. @defaultValue `15000` */
  leaseDurationMs?: number;
  /** A leader that has not renewed for this long stops leading; below leaseDurationMs. @defaultValue `10000` */
  renewDeadlineMs?: number;
  /** Interval between attempts to acquire or renew. @defaultValue `2000` */
  retryPeriodMs?: number;
  /** Called when this candidate becomes leader. */
  onStartedLeading: () => Promise<void> | void;
  /** Called when this candidate stops leading (lost the lease, or stop()). */
  onStoppedLeading: () => Promise<void> | void;
  /** Told about failed API calls (they are retried). @defaultValue ignore */
  onError?: (error: unknown) => void;
}

type Attempt = 'leading' | 'held-by-other';

/** A Lease time: RFC 3339 with exactly six fractional digits, the only form MicroTime parses. */
function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  readonly identity: string;
  private readonly api: CoordinationV1Api;
  private readonly name: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private leading = false;
  private reached = false;
  private stopped = true;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private lastRenewAt = 0;
  private observedRecord = '';
  private observedAt = 0;

  constructor(
    kubeConfig: KubeConfig,
    private readonly options: LeaderElectionOptions,
  ) {
    this.api = kubeConfig.makeApiClient(CoordinationV1Api);
    this.name = options.name ?? 'uhlp-operator';
    this.identity = options.identity ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    if (this.renewDeadlineMs >= this.leaseDurationMs) {
      throw new UhlpError('UHLP_CONFIG_INVALID', `renewDeadlineMs (${this.renewDeadlineMs}) must be below leaseDurationMs (${this.leaseDurationMs})`, {
        field: 'renewDeadlineMs',
      });
    }
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** True once an attempt read or wrote the lease (whoever holds it). */
  get reachedApiServer(): boolean {
    return this.reached;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  /** Stops competing; a leader stops leading first, then releases the lease. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    if (this.leading) {
      this.leading = false;
      await this.callback(this.options.onStoppedLeading);
      await this.release().catch((error: unknown) => this.options.onError?.(error));
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let attempt: Attempt | 'failed';
      try {
        attempt = await this.tryAcquireOrRenew();
        this.reached = true;
      } catch (error) {
        this.options.onError?.(error);
        attempt = 'failed';
      }
      if (this.stopped) break;
      const now = Date.now();
      if (attempt === 'leading') {
        this.lastRenewAt = now;
        if (!this.leading) {
          this.leading = true;
          await this.callback(this.options.onStartedLeading);
        }
      } else if (this.leading && (attempt === 'held-by-other' || now - this.lastRenewAt > this.renewDeadlineMs)) {
        this.leading = false;
        await this.callback(this.options.onStoppedLeading);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.retryPeriodMs);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  // A failing callback must not end the election loop; it is reported like an API failure.
  private async callback(callback: () => Promise<void> | void): Promise<void> {
    try {
      await callback();
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  private async tryAcquireOrRenew(): Promise<Attempt> {
    const now = new Date();
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.options.namespace });
    } catch (error) {
      if (apiStatus(error) !== 404) throw error;
      try {
        await this.api.createNamespacedLease({
          namespace: this.options.namespace,
          body: { metadata: { name: this.name, namespace: this.options.namespace }, spec: this.record(now, undefined) },
        });
        return 'leading';
      } catch (createError) {
        if (apiStatus(createError) === 409) return 'held-by-other';
        throw createError;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = JSON.stringify([holder, spec.renewTime, spec.leaseDurationSeconds]);
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedAt = now.getTime();
    }
    const durationMs = (spec.leaseDurationSeconds ?? 0) * 1000;
    if (holder !== '' && holder !== this.identity && now.getTime() - this.observedAt < durationMs) return 'held-by-other';
    try {
      await this.api.replaceNamespacedLease({
        name: this.name,
        namespace: this.options.namespace,
        body: { metadata: { ...lease.metadata, name: this.name }, spec: this.record(now, spec) },
      });
      return 'leading';
    } catch (error) {
      if (apiStatus(error) === 409) return 'held-by-other';
      throw error;
    }
  }

  // MicroTime fields go over the wire as strings: the client's serializer passes unknown
  // types through, and a Date would be sent with millisecond precision, which the server rejects.
  private record(now: Date, previous: V1Lease['spec'] | undefined): NonNullable<V1Lease['spec']> {
    const renewing = previous?.holderIdentity === this.identity;
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      renewTime: microTime(now) as unknown as Date,
      acquireTime: (renewing ? previous.acquireTime : microTime(now)) as unknown as Date,
      // Counts changes of holder: 0 for the lease's creator, +1 per takeover.
      leaseTransitions: previous === undefined ? 0 : (previous.leaseTransitions ?? 0) + (renewing ? 0 : 1),
    };
  }

  /** Hands the lease back (empty holder, one-second duration) so a waiting candidate takes it now. */
  private async release(): Promise<void> {
    const lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.options.namespace });
    if (lease.spec?.holderIdentity !== this.identity) return;
    await this.api.replaceNamespacedLease({
      name: this.name,
      namespace: this.options.namespace,
      body: {
        metadata: lease.metadata,
        spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(new Date()) as unknown as Date },
      },
    });
  }
}

export interface LeaseTakeover {
  /** Who held the lease before (empty when nobody did, or it was released). */
  readonly previousHolder: string;
  /** How long the previous holder's lease ran without renewal, ms: past it, that holder has stopped leading. */
  readonly previousDurationMs: number;
}

/**
 * Takes the lease whoever holds it, for `holdSeconds`, so that no candidate leads
 * meanwhile: the holder's next renewal finds the lease held by another and stops
 * leading (or, cut off from the API server, it stops once renewDeadline passed, which
 * is below the lease duration). For `uhlp operator --uninstall`, which must keep a
 * release's operators from re-creating what it deletes. Each write carries the
 * resourceVersion read; a conflict is read and tried again.
 */
export async function takeOverLease(
  kubeConfig: KubeConfig,
  options: { namespace: string; name?: string; identity: string; holdSeconds: number },
): Promise<LeaseTakeover> {
  const api = kubeConfig.makeApiClient(CoordinationV1Api);
  const name = options.name ?? 'uhlp-operator';
  const { namespace } = options;
  for (let attempt = 0; ; attempt++) {
    const now = microTime(new Date()) as unknown as Date;
    const spec = { holderIdentity: options.identity, leaseDurationSeconds: options.holdSeconds, renewTime: now, acquireTime: now };
    try {
      const lease = await api.readNamespacedLease({ name, namespace }).catch((error: unknown) => {
        if (apiStatus(error) === 404) return undefined;
        throw error;
      });
      if (!lease) {
        await api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec: { ...spec, leaseTransitions: 0 } } });
        return { previousHolder: '', previousDurationMs: 0 };
      }
      const previous = lease.spec ?? {};
      await api.replaceNamespacedLease({
        name,
        namespace,
        body: { metadata: { ...lease.metadata, name }, spec: { ...spec, leaseTransitions: (previous.leaseTransitions ?? 0) + 1 } },
      });
      const holder = previous.holderIdentity ?? '';
      return { previousHolder: holder === options.identity ? '' : holder, previousDurationMs: holder === '' ? 0 : (previous.leaseDurationSeconds ?? 0) * 1000 };
    } catch (error) {
      // 409: a candidate wrote the lease between our read and write; read it again.
      if (apiStatus(error) !== 409 || attempt >= 10) throw error;
    }
  }
}

