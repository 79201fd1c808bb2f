/**
 * One cron route's timer on this core. At each slot every core running the
 * schedule tries to fire the slot in the delivery store; the one whose claim
 * wins publishes the slot's message (in the same step) (`cronDetails {jobId, scheduledTime}`) onto
 * the route's stream, where the route's consumers run it with the delivery
 * contract (retries, dead letters). The claim also records the last fired slot,
 * so after downtime the route's `missed` policy decides between skipping the
 * slots missed and one catch-up run for the latest of them.
 */
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import type { DeliveryStore } from '../../state/delivery-store.js';
import type { CronRoute } from '../source-routes.js';
import { inCronFiringSpan } from '../../tracing/delivery-spans.js';

export interface CronSchedulerDeps {
  readonly store: DeliveryStore;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Names this core in slot claims. */
  readonly claimant: string;
}

/** Longest single timer: a later slot is reached by re-arming (timers cap at 2^31 ms, and clocks get adjusted). */
const MAX_TIMER_MS = 60_000;
/** How long a slot's claim is kept: every core's timer for the slot fires well within it. */
const CLAIM_TTL_MS = 3600_000;
/** Slots walked to find the latest missed one before jumping closer to now. */
const MAX_WALK = 1000;

export class CronScheduler {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private firing: Promise<void> = Promise.resolve();

  constructor(
    private readonly route: CronRoute,
    private readonly deps: CronSchedulerDeps,
  ) {}

  start(): void {
    this.firing = this.catchUp().finally(() => this.arm());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.firing.catch(() => undefined);
  }

  /** After downtime: one run for the latest slot missed (`run-once`), or none (`skip`). */
  private async catchUp(): Promise<void> {
    const { cron, address } = this.route;
    if (cron.missed !== 'run-once') return;
    try {
      const last = await this.deps.store.lastCronSlot(address.app, cron.jobId);
      // A job that never fired has missed nothing: its first slot is its next one.
      if (last === undefined) return;
      const latest = this.latestSlot(new Date(last), new Date());
      if (latest !== undefined) await this.fire(latest);
    } catch (error) {
      this.deps.logger.warn({ err: error instanceof Error ? error.message : String(error), app: address.app, job: cron.jobId }, 'cron catch-up failed');
    }
  }

  /** The latest slot in (after, now]. */
  private latestSlot(after: Date, now: Date): Date | undefined {
    const { schedule } = this.route;
    let cursor = after;
    let latest: Date | undefined;
    for (let walked = 0; ; walked++) {
      const slot = schedule.next(cursor);
      if (slot === undefined || slot.getTime() > now.getTime()) return latest;
      latest = slot;
      cursor = slot;
      if (walked === MAX_WALK) {
        // A dense schedule after a long downtime: jump to the last stretch before now.
        const step = Math.max(1000, slot.getTime() - after.getTime()) / MAX_WALK;
        const jump = new Date(now.getTime() - Math.ceil(step * 2));
        if (jump.getTime() > cursor.getTime()) cursor = jump;
        walked = 0;
      }
    }
  }

  private arm(): void {
    if (this.stopped) return;
    const next = this.route.schedule.next(new Date());
    if (next === undefined) return;
    const wait = next.getTime() - Date.now();
    this.timer = setTimeout(
      () => {
        if (Date.now() < next.getTime()) return this.arm();
        this.firing = this.fire(next)
          .catch((error: unknown) =>
            this.deps.logger.warn({ err: error instanceof Error ? error.message : String(error), app: this.route.address.app, job: this.route.cron.jobId }, 'cron slot not fired'),
          )
          .finally(() => this.arm());
      },
      Math.max(0, Math.min(wait, MAX_TIMER_MS)),
    );
  }

  /** Claims the slot and, when this core got it, publishes its message (in the firing's span, which its turn is a child of). */
  private async fire(slot: Date): Promise<void> {
    const { address, cron } = this.route;
    const slotMs = slot.getTime();
    const scheduledTime = slot.toISOString();
    // Keys in code-unit order: the payload is the contract's cronDetails as canonical JSON.
    const message = { payload: JSON.stringify({ jobId: cron.jobId, scheduledTime }), invocationId: `${cron.jobId}@${scheduledTime}` };
    const firing = { app: address.app, jobId: cron.jobId, schedule: cron.schedule, timezone: this.route.schedule.timezone, scheduledTime, claimant: this.deps.claimant };
    const fired = await inCronFiringSpan(firing, (meta) =>
      this.deps.store.fireCronSlot(address, slotMs, this.deps.claimant, CLAIM_TTL_MS, { ...message, ...(meta !== undefined ? { meta } : {}) }),
    );
    if (!fired) return;
    this.deps.metrics.cronFires.inc({ app: address.app, job: cron.jobId });
    this.deps.metrics.cronLatenessSeconds.observe({ app: address.app }, Math.max(0, Date.now() - slotMs) / 1000);
  }
}
